// Loaded with --require into a child process under test: prints the
// process's peak resident memory (kB) on stderr as it exits.
process.on('exit', () => {
  require('node:fs').writeSync(2, `\nmax_rss_kb=${process.resourceUsage().maxRSS}\n`);
});

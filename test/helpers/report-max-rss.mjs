// Preloaded with `node --import` into a child under test: writes the process's
// peak resident set size (bytes) to the file named by INLET_TEST_MAX_RSS_FILE at exit.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  writeFileSync(process.env.INLET_TEST_MAX_RSS_FILE, String(process.resourceUsage().maxRSS * 1024));
});

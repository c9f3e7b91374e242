import { readFileSync, writeFileSync } from 'node:fs';
import { SETTINGS, type SettingSpec } from './settings.js';

/** docs/settings.md, from the repository's root (dist/ and src/ sit one folder below it). */
export const SETTINGS_PAGE = new URL('../docs/settings.md', import.meta.url);

const START = '<!-- settings table: generated from src/settings.ts by `npm run docs:settings` -->';
const END = '<!-- end of settings table -->';

const cell = (s: string) => s.replace(/\|/g, '\\|');

/** The Markdown table of every setting, as docs/settings.md holds it. */
export function settingsTable(): string {
  const rows = (Object.values(SETTINGS) as SettingSpec<unknown>[]).map(
    (s) => `| \`${s.env}\` | ${s.flag === undefined ? '' : `\`${s.flag}\``} | \`${cell(s.shown)}\` | ${cell(s.accepts)} | ${cell(s.about)} |`,
  );
  return [START, '| environment | flag of `inlet serve` | default | accepted values | what it does |', '|---|---|---|---|---|', ...rows, END].join('\n');
}

/** The table as the page holds it now, or null when the page has no table. */
export function tableInPage(page: string): string | null {
  const a = page.indexOf(START);
  const b = page.indexOf(END);
  return a === -1 || b < a ? null : page.slice(a, b + END.length);
}

/** Rewrites the table in docs/settings.md from the code. */
export function writeSettingsPage(): void {
  const page = readFileSync(SETTINGS_PAGE, 'utf8');
  const old = tableInPage(page);
  if (old === null) throw new Error(`docs/settings.md has no table between "${START}" and "${END}".`);
  writeFileSync(SETTINGS_PAGE, page.replace(old, settingsTable()));
}

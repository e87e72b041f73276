// Shared helpers for the e2e specs (node --test + playwright-core driving the system Chromium).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from './server.mjs';

export const E2E_DIR = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(E2E_DIR, '..', '..');
export const DIST = path.join(REPO, 'dist');
export const ARTIFACTS = path.join(E2E_DIR, 'artifacts');
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Start server.mjs on a free port serving dist/ (or `root`). Fails clearly if dist/ was not built. */
export async function serveDist(opts = {}) {
  const root = opts.root ?? DIST;
  if (!fs.existsSync(path.join(root, 'index.html'))) {
    throw new Error(`${root}/index.html missing: run scripts/build-web.sh first`);
  }
  return startServer({ root, port: 0, ...opts });
}

/**
 * Launch headless Chromium with a throwaway profile. Returns { context, page, errors, close }.
 * `errors` collects uncaught page errors and console errors, so a spec can assert there were none.
 */
export async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tensorscope-e2e-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // A failed load names its URL, so a spec can tell an expected 404 from another.
    const url = /^Failed to load resource/.test(m.text()) ? ` (${m.location().url})` : '';
    if (m.type() === 'error') errors.push(`console: ${m.text()}${url}`);
  });
  return {
    context,
    page,
    errors,
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * The errors a page logged, apart: the base names of the URLs it was answered 404 for, in the
 * order asked, and every other error.
 */
export function notFound(errors) {
  const missing = [];
  const other = [];
  for (const e of errors) {
    const name = e.match(/status of 404 \(Not Found\) \(.*\/([^/]+)\)$/)?.[1];
    if (name) missing.push(name);
    else other.push(e);
  }
  return { missing, other };
}

/** The files a file of weights opened alone by URL asks for beside it (src/formats/config.rs). */
export const COMPANIONS = ['config.json', 'generation_config.json', 'tokenizer_config.json', 'chat_template.jinja'];

/** [`notFound`] with the missing files' names sorted: requests in flight end in any order. */
export function notFoundSorted(errors) {
  const found = notFound(errors);
  found.missing.sort();
  return found;
}

/** Save a full-page screenshot to tests/e2e/artifacts/<name>.png; returns its path. */
export async function screenshot(page, name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

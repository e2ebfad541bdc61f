#!/usr/bin/env node
// @ts-check
// secret: keeps secret values out of what the assistant shows you.
//
// Written with the TypeScript SDK (zut-ext) as plain JavaScript, so it runs
// as it is with `node index.js`: nothing to compile, and `// @ts-check` plus
// the SDK's index.d.ts still give an editor full types.
//
//   /secret add NAME     opens a masked input panel: each typed character
//                        shows as `*`, Enter saves, Backspace deletes, Esc
//                        cancels
//   /secret list         shows the names (never the values)
//   /secret remove NAME  forgets one
//   assistant_message    every known value in the assistant's text is
//                        replaced by `[redacted:NAME]` before you see it
//
// Values live in this process's memory only; nothing is written to disk.
// An environment variable ZUT_SECRET_<NAME>=<value> seeds secret NAME at
// start (handy in scripts and tests).
'use strict';

const path = require('node:path');

/**
 * The SDK: a copy vendored next to this file (installed copies), the npm
 * package, or the repository's build when run from a checkout.
 * @returns {typeof import('../../../sdk/typescript/dist/index')}
 */
function loadSdk() {
  const candidates = [
    path.join(__dirname, 'zut-ext.js'),
    'zut-ext',
    path.join(__dirname, '..', '..', '..', 'sdk', 'typescript', 'dist', 'index.js'),
  ];
  for (const c of candidates) {
    try {
      return require(c);
    } catch (err) {
      if (/** @type {{code?: string}} */ (err).code !== 'MODULE_NOT_FOUND') throw err;
    }
  }
  process.stderr.write('[secret] zut-ext not found: vendor sdk/typescript/dist/index.js as zut-ext.js next to index.js\n');
  process.exit(1);
}

const z = loadSdk();
const ext = new z.Extension('secret', '1.0.0');

/** Shorter values would shred ordinary words in the assistant's text. */
const MIN_LENGTH = 4;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const FOOTER = 'type the value · enter saves · backspace deletes · esc cancels';

/** @type {Map<string, string>} name → value */
const secrets = new Map();

for (const [key, value] of Object.entries(process.env)) {
  if (!key.startsWith('ZUT_SECRET_') || value === undefined) continue;
  const name = key.slice('ZUT_SECRET_'.length);
  if (!NAME.test(name) || [...value].length < MIN_LENGTH) {
    ext.log(`ignoring ${key}: needs a name of letters, digits, _ . - and a value of at least ${MIN_LENGTH} characters`);
    continue;
  }
  secrets.set(name, value);
}

/**
 * Replaces every known value, longest first, so a secret that contains
 * another is redacted whole.
 * @param {string} text
 */
function redact(text) {
  const byLength = [...secrets].sort((a, b) => b[1].length - a[1].length);
  let out = text;
  for (const [name, value] of byLength) out = out.split(value).join(`[redacted:${name}]`);
  return out;
}

ext.interceptAssistantMessage((text) => ({ replaceText: redact(text) }));

let panels = 0;

/**
 * The masked input for one `/secret add NAME`.
 * @param {string} name
 */
function askValue(name) {
  const id = `secret-add-${++panels}`;
  /** @type {string[]} one entry per character, so Backspace removes a whole one */
  let chars = [];
  let hint = '';
  const title = `Secret ${name}`;
  const lines = () => [`value: ${'*'.repeat(chars.length)}`, hint];
  const redraw = () => ext.renderPanel(id, title, lines(), FOOTER);
  ext.onPanelKey(
    id,
    (key, text) => {
      if (key === 'rune') {
        chars.push(...text);
        hint = '';
      } else if (key === 'backspace') {
        chars.pop();
        hint = '';
      } else if (key === 'enter') {
        if (chars.length < MIN_LENGTH) {
          hint = `at least ${MIN_LENGTH} characters`;
        } else {
          secrets.set(name, chars.join(''));
          const n = chars.length;
          chars = [];
          ext.closePanel(id);
          ext.forgetPanel(id);
          ext.notify('success', `secret ${name} saved (${n} characters)`);
          return;
        }
      } else {
        return; // arrows and the like change nothing
      }
      redraw();
    },
    () => {
      // Esc or Ctrl+C in zut: the panel is gone, and so is what was typed.
      chars = [];
      ext.forgetPanel(id);
      ext.notify('info', `secret ${name} not saved`);
    },
  );
  return z.openPanelResponse({ id, title, lines: lines(), footer: FOOTER });
}

const USAGE = 'usage: /secret add NAME | /secret list | /secret remove NAME';

ext.command('secret', 'add, list or remove secrets redacted from assistant messages', (args) => {
  const [verb = '', name = '', ...rest] = args.split(/\s+/).filter(Boolean);
  switch (verb) {
    case 'add':
      if (!NAME.test(name) || rest.length > 0) return z.error(`secret: NAME is letters, digits, _ . - (${USAGE})`);
      return askValue(name);
    case 'list':
      return z.display(secrets.size === 0
        ? 'no secrets yet; add one with /secret add NAME'
        : `secrets (values hidden): ${[...secrets.keys()].sort().join(', ')}`);
    case 'remove':
      if (!secrets.delete(name)) return z.error(`secret: no secret named ${JSON.stringify(name)}`);
      return z.display(`secret ${name} removed`);
    default:
      return z.error(USAGE);
  }
});

ext.run();

// examples/extensions/secret, driven over its pipes the way zut drives it:
// the masked panel, list/remove, redaction, and seeding from the environment.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Child } = require('../testkit/harness');

const SECRET = path.join(__dirname, '..', '..', '..', 'examples', 'extensions', 'secret', 'index.js');

async function started(env = {}) {
  const c = new Child(SECRET, [], env);
  const { hello, announced } = await c.handshake();
  assert.equal(hello.name, 'secret');
  assert.deepEqual(announced.map((f) => f.type), ['register_command', 'subscribe']);
  assert.deepEqual(announced[1].intercept, ['assistant_message']);
  return c;
}

let ids = 0;
async function command(c, args) {
  const id = `c${++ids}`;
  c.send({ type: 'command_invoked', id, name: 'secret', args });
  return c.expect('command_response', (f) => f.id === id);
}
async function intercept(c, text) {
  const id = `i${++ids}`;
  c.send({ type: 'event_intercept', id, event: 'assistant_message', text });
  return c.expect('event_intercept_response', (f) => f.id === id);
}
function key(c, panelId, k, text) {
  const frame = { type: 'panel_key', panel_id: panelId, key: k };
  if (text !== undefined) frame.text = text;
  c.send(frame);
}

test('add through the masked panel, then the value is redacted', async () => {
  const c = await started();
  assert.equal((await command(c, 'list')).display, 'no secrets yet; add one with /secret add NAME');
  const open = await command(c, 'add API_KEY');
  assert.equal(open.action, 'open_panel');
  const panel = open.open_panel;
  assert.equal(panel.title, 'Secret API_KEY');
  assert.equal(panel.lines[0], 'value: ');
  for (const ch of 'sk-12x') key(c, panel.id, 'rune', ch);
  let render;
  for (let i = 1; i <= 6; i++) {
    render = await c.expect('panel_render');
    assert.equal(render.lines[0], `value: ${'*'.repeat(i)}`, 'one star per character, never the value');
  }
  key(c, panel.id, 'backspace');
  assert.equal((await c.expect('panel_render')).lines[0], 'value: *****');
  key(c, panel.id, 'rune', '3');
  await c.expect('panel_render');
  key(c, panel.id, 'left');
  key(c, panel.id, 'enter');
  assert.deepEqual(await c.expect('panel_close'), { type: 'panel_close', panel_id: panel.id });
  assert.deepEqual(await c.expect('notify'), { type: 'notify', level: 'success', message: 'secret API_KEY saved (6 characters)' });
  assert.ok(!JSON.stringify(c.frames).includes('sk-123'), 'the value never leaves the extension');
  assert.equal((await command(c, 'list')).display, 'secrets (values hidden): API_KEY');
  const r = await intercept(c, 'use sk-123 and sk-123 again');
  assert.equal(r.replace_text, 'use [redacted:API_KEY] and [redacted:API_KEY] again');
  assert.deepEqual(await intercept(c, 'nothing to hide'), { type: 'event_intercept_response', id: `i${ids}` });
  assert.equal((await command(c, 'remove API_KEY')).display, 'secret API_KEY removed');
  assert.equal((await intercept(c, 'use sk-123')).replace_text, undefined);
  c.send({ type: 'shutdown' });
  await c.expect('shutdown_ack');
  assert.equal((await c.exit()).code, 0);
});

test('Esc (panel_close from zut) cancels; too short a value is refused', async () => {
  const c = await started();
  const first = (await command(c, 'add PIN')).open_panel;
  key(c, first.id, 'rune', 'ab');
  assert.equal((await c.expect('panel_render')).lines[0], 'value: **');
  key(c, first.id, 'enter');
  assert.deepEqual((await c.expect('panel_render')).lines, ['value: **', 'at least 4 characters']);
  c.send({ type: 'panel_close', panel_id: first.id });
  assert.equal((await c.expect('notify')).message, 'secret PIN not saved');
  const renders = () => c.frames.filter((f) => f.type === 'panel_render').length;
  const before = renders();
  assert.equal((await command(c, 'list')).display, 'no secrets yet; add one with /secret add NAME');
  // Keys for a panel that is gone change nothing.
  key(c, first.id, 'enter');
  assert.match((await command(c, 'add')).error, /^secret: NAME is/);
  assert.match((await command(c, 'frobnicate')).error, /^usage: /);
  assert.match((await command(c, 'remove NOPE')).error, /no secret named "NOPE"/);
  assert.equal(renders(), before, 'no redraw for a closed panel');
  assert.ok(!c.frames.some((f) => f.type === 'notify' && f.level === 'success'));
  c.end();
  assert.equal((await c.exit()).code, 0);
});

test('ZUT_SECRET_<NAME> seeds a secret; longer values are redacted first', async () => {
  const c = await started({ ZUT_SECRET_LONG: 'hunter2hunter2', ZUT_SECRET_SHORT: 'hunter2', ZUT_SECRET_X: 'ab' });
  await c.stderrHas('ignoring ZUT_SECRET_X');
  assert.equal((await command(c, 'list')).display, 'secrets (values hidden): LONG, SHORT');
  assert.equal((await intercept(c, 'a hunter2hunter2 b hunter2')).replace_text, 'a [redacted:LONG] b [redacted:SHORT]');
  c.end();
  assert.equal((await c.exit()).code, 0);
});

// decodeFrame and encodeFrame on their own (the shared vectors test them
// too; these cases do not depend on the vectors being present).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const z = require('../dist/index.js');

test('decodeFrame accepts unknown types and fields, rejects what is not a frame', () => {
  assert.equal(z.decodeFrame('{"type":"tool_call","id":"1","name":"x","args":{},"new":1}').type, 'tool_call');
  const future = z.decodeFrame('{"type":"from_the_future","x":[1]}');
  assert.equal(future.type, 'from_the_future');
  assert.equal(z.isKnownHostFrame(future), false);
  assert.equal(z.isKnownHostFrame(z.decodeFrame('{"type":"shutdown"}')), true);
  for (const bad of ['', 'nope', '{"type":"x"', '[]', '"s"', '1', 'null', '{"id":1}', '{"type":7}']) {
    assert.throws(() => z.decodeFrame(bad), z.FrameError, JSON.stringify(bad));
  }
});

test('encodeFrame: one line, protocol fields only, undefined left out, null details kept', () => {
  const line = z.encodeFrame({ type: 'tool_result', id: 't', content: [z.text('a\nb')], is_error: undefined, details: null, stray: 1 });
  assert.ok(!line.includes('\n'));
  assert.deepEqual(JSON.parse(line), { type: 'tool_result', id: 't', content: [{ type: 'text', text: 'a\nb' }], details: null });
  assert.deepEqual(JSON.parse(z.encodeFrame({ type: 'tool_result', id: 't', content: [] })), { type: 'tool_result', id: 't', content: [] });
  assert.deepEqual(
    JSON.parse(z.encodeFrame({ type: 'command_response', id: 'c', action: 'open_panel', open_panel: { id: 'p', lines: [], extra: 1 } })),
    { type: 'command_response', id: 'c', action: 'open_panel', open_panel: { id: 'p', lines: [] } },
  );
  assert.deepEqual(JSON.parse(z.encodeFrame({ type: 'status', key: 'k', text: '' })), { type: 'status', key: 'k', text: '' });
});

test('helpers build the documented shapes', () => {
  assert.deepEqual(z.prompt('p'), { action: 'prompt', prompt: 'p' });
  assert.deepEqual(z.insert('i'), { action: 'insert', insert: 'i' });
  assert.deepEqual(z.display('d'), { action: 'display', display: 'd' });
  assert.deepEqual(z.noop(), { action: 'noop' });
  assert.deepEqual(z.error('e'), { action: 'noop', error: 'e' });
  const panel = { id: 'x', title: 't', lines: ['l'], footer: 'f' };
  assert.deepEqual(z.openPanelResponse(panel), { action: 'open_panel', openPanel: panel });
  assert.deepEqual(z.imageBytes('image/png', new Uint8Array([0x89, 0x50])), { type: 'image', mimeType: 'image/png', data: 'iVA=' });
  assert.deepEqual(z.textResult('t'), { content: [{ type: 'text', text: 't' }] });
  assert.deepEqual(z.errorResult('e'), { content: [{ type: 'text', text: 'e' }], isError: true });
  assert.equal(z.PROTOCOL_VERSION, 2);
  assert.ok(z.CAPABILITIES.includes('tool_cancel'));
});

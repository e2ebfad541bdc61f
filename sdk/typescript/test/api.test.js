// The SDK's public API, item by item, driven through a real child process
// (test/fixtures/kitchen.js) over pipes.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Child, helloAck, FIXTURES } = require('../testkit/harness');

const KITCHEN = path.join(FIXTURES, 'kitchen.js');

async function started(args, ack) {
  const c = new Child(KITCHEN, args);
  const hs = await c.handshake(ack);
  return { c, ...hs };
}

async function stop(c) {
  c.send({ type: 'shutdown' });
  await c.expect('shutdown_ack');
  const { code } = await c.exit();
  assert.equal(code, 0, c.stderr);
}

test('handshake: hello, then registrations in order, one subscribe, ready', async () => {
  const { c, hello, announced } = await started();
  assert.deepEqual(hello, {
    type: 'hello',
    protocol_version: 2,
    name: 'kitchen',
    version: '2.3.4',
    capabilities: ['commands', 'tools', 'events', 'alerts', 'panels', 'session_state', 'status', 'widgets', 'tool_cancel'],
  });
  assert.equal(c.frames[0].type, 'hello', 'hello is the very first frame');
  const types = announced.map((f) => f.type);
  const firstTool = types.indexOf('register_tool');
  assert.ok(types.lastIndexOf('register_command') < firstTool, 'commands before tools');
  assert.equal(types.filter((t) => t === 'subscribe').length, 1);
  assert.equal(types[types.length - 1], 'subscribe', 'subscribe comes last, right before ready');
  const commands = announced.filter((f) => f.type === 'register_command').map((f) => f.name);
  // Registration order is kept; onHello's registrations come last because
  // they happen after the module's own, and they are announced all the same.
  assert.deepEqual(commands, ['hi', 'p', 'i', 'none', 'bad', 'throw', 'empty', 'async', 'panel', 'host', 'log', 'late', 'runtime', 'where', 'later']);
  const tools = announced.filter((f) => f.type === 'register_tool');
  assert.deepEqual(tools.map((t) => t.name), ['echo', 'fail', 'throw', 'reject', 'details', 'clear', 'img', 'loader', 'hidden', 'ask', 'quick']);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.deepEqual(byName.echo, {
    type: 'register_tool',
    name: 'echo',
    description: 'echo args',
    schema: { type: 'object', properties: { q: { type: 'string' } } },
  });
  assert.equal(byName.hidden.deferred, true);
  assert.equal(byName.hidden.interactive, undefined);
  assert.equal(byName.ask.interactive, true);
  assert.equal(byName.ask.deferred, undefined);
  const sub = announced.find((f) => f.type === 'subscribe');
  assert.deepEqual(sub, {
    type: 'subscribe',
    events: ['turn_start', 'session_opened', 'tool_call', 'turn_end'],
    intercept: ['tool_call', 'turn_start', 'assistant_message'],
  });
  await stop(c);
});

test('no events and no interceptors: no subscribe frame', async () => {
  const { c, announced } = await started(['plain']);
  assert.deepEqual(announced, [{ type: 'register_command', name: 'only', description: 'the only command' }]);
  await stop(c);
});

test('host info: filled from hello_ack, given to onHello, session converted', async () => {
  const session = { id: 'b1', parent_id: 'r1', path: '/s/b1.jsonl', cwd: '/tmp/project', fork_point: 4 };
  const { c } = await started([], { session, extra_field: 'tolerated' });
  const expected = {
    protocolVersion: 2,
    zutVersion: '0.1.0-test',
    provider: 'script',
    model: 'test-model',
    cwd: '/tmp/project',
    extensionDir: '/tmp/ext',
    dataDir: '/tmp/ext',
    session: { id: 'b1', parentId: 'r1', path: '/s/b1.jsonl', cwd: '/tmp/project', forkPoint: 4 },
    features: [],
  };
  c.send({ type: 'command_invoked', id: 'w', name: 'where' });
  assert.deepEqual(JSON.parse((await c.expect('command_response')).display), expected);
  c.send({ type: 'command_invoked', id: 'h', name: 'host' });
  assert.deepEqual(JSON.parse((await c.expect('command_response')).display), expected);
  c.send({ type: 'command_invoked', id: 'l', name: 'later' });
  assert.equal((await c.expect('command_response')).display, 'later');
  await stop(c);
});

test('a throwing onHello is logged and the extension still becomes ready', async () => {
  const { c, announced } = await started(['hello-throws']);
  assert.ok(announced.some((f) => f.type === 'register_command' && f.name === 'where'));
  await c.stderrHas('[kitchen] onHello failed: hello hook broke');
  await stop(c);
});

test('command responses: every helper, throwing, empty, async, unknown', async () => {
  const { c } = await started();
  const call = async (name, args) => {
    const id = `c-${name}`;
    const frame = { type: 'command_invoked', id, name };
    if (args !== undefined) frame.args = args;
    c.send(frame);
    const r = await c.expect('command_response', (f) => f.id === id);
    delete r.id;
    return r;
  };
  assert.deepEqual(await call('hi', 'bob'), { type: 'command_response', action: 'display', display: 'hi bob' });
  assert.deepEqual(await call('hi'), { type: 'command_response', action: 'display', display: 'hi ' });
  assert.deepEqual(await call('p', 'x'), { type: 'command_response', action: 'prompt', prompt: 'prompt x' });
  assert.deepEqual(await call('i', 'y'), { type: 'command_response', action: 'insert', insert: 'insert y' });
  assert.deepEqual(await call('none'), { type: 'command_response', action: 'noop' });
  assert.deepEqual(await call('bad'), { type: 'command_response', action: 'noop', error: 'bad thing' });
  assert.deepEqual(await call('throw'), { type: 'command_response', action: 'noop', error: 'panic: command broke' });
  assert.deepEqual(await call('empty'), { type: 'command_response', action: 'noop' });
  assert.deepEqual(await call('async', 'z'), { type: 'command_response', action: 'display', display: 'async z' });
  assert.deepEqual(await call('panel'), {
    type: 'command_response',
    action: 'open_panel',
    open_panel: { id: 'p1', title: 'Panel', lines: ['a', 'b'], footer: 'esc closes' },
  });
  assert.deepEqual(await call('nope'), { type: 'command_response', action: 'noop', error: 'no handler for /nope' });
  await stop(c);
});

test('slow handlers do not hold up others', async () => {
  const { c } = await started();
  c.send({ type: 'command_invoked', id: 'slow', name: 'async', args: 'a' });
  c.send({ type: 'command_invoked', id: 'fast', name: 'hi', args: 'b' });
  const first = await c.expect('command_response');
  assert.equal(first.id, 'fast');
  assert.equal((await c.expect('command_response')).id, 'slow');
  await stop(c);
});

test('tool results: text, error, throw, reject, details, null details, images, activateTools, deferred, unknown', async () => {
  const { c } = await started();
  const call = async (name, args) => {
    const id = `t-${name}`;
    c.send({ type: 'tool_call', id, name, args });
    const r = await c.expect('tool_result', (f) => f.id === id);
    delete r.id;
    delete r.type;
    return r;
  };
  assert.deepEqual(await call('echo', { q: 'é"\n' }), { content: [{ type: 'text', text: '{"q":"é\\"\\n"}' }] });
  assert.deepEqual(await call('echo', undefined), { content: [{ type: 'text', text: '{}' }] }, 'missing args become {}');
  assert.deepEqual(await call('fail', {}), { content: [{ type: 'text', text: 'it failed' }], is_error: true });
  assert.deepEqual(await call('throw', {}), { content: [{ type: 'text', text: 'panic: tool broke' }], is_error: true });
  assert.deepEqual(await call('reject', {}), { content: [{ type: 'text', text: 'panic: tool rejected' }], is_error: true });
  assert.deepEqual(await call('details', { v: [1, { w: null }] }), {
    content: [{ type: 'text', text: 'ok' }],
    details: { v: [1, { w: null }] },
  });
  const cleared = await call('clear', {});
  assert.ok('details' in cleared, 'explicit null details are sent');
  assert.equal(cleared.details, null);
  assert.deepEqual(await call('img', {}), {
    content: [
      { type: 'image', mime_type: 'image/png', data: 'iVBORw0KGgo=' },
      { type: 'image', mime_type: 'image/gif', data: 'R0lG' },
    ],
  });
  assert.deepEqual(await call('loader', {}), { content: [{ type: 'text', text: 'loaded' }], activate_tools: ['hidden'] });
  assert.deepEqual(await call('hidden', {}), { content: [{ type: 'text', text: 'found me' }] });
  assert.deepEqual(await call('missing', {}), {
    content: [{ type: 'text', text: 'no handler for tool "missing"' }],
    is_error: true,
  });
  await stop(c);
});

test('interactive tool: answered through its panel', async () => {
  const { c } = await started();
  c.send({ type: 'tool_call', id: 'a1', name: 'ask', args: { q: 'proceed?' } });
  const open = await c.expect('open_panel');
  assert.deepEqual(open, { type: 'open_panel', panel: { id: 'ask-a1', title: 'Question', lines: ['proceed?'], footer: 'y/n' } });
  c.send({ type: 'panel_key', panel_id: 'ask-a1', key: 'rune', text: 'y' });
  assert.deepEqual(await c.expect('tool_result'), { type: 'tool_result', id: 'a1', content: [{ type: 'text', text: 'approved proceed?' }] });
  c.send({ type: 'tool_call', id: 'a2', name: 'quick', args: {} });
  assert.equal((await c.expect('tool_result')).content[0].text, 'quick false');
  await stop(c);
});

test('interactive tool: tool_cancel aborts the signal and the late result is dropped', async () => {
  const { c } = await started();
  c.send({ type: 'tool_call', id: 'a1', name: 'ask', args: { q: 'one' } });
  await c.expect('open_panel');
  c.send({ type: 'tool_cancel', id: 'a1' });
  c.send({ type: 'tool_cancel', id: 'unknown-id' });
  assert.deepEqual(await c.expect('panel_close'), { type: 'panel_close', panel_id: 'ask-a1' });
  await c.expect('notify', (f) => f.message === 'cancelled a1 aborted=true');
  // Cancellation in the same read as the call: the handler still sees it.
  c.sendRaw(
    JSON.stringify({ type: 'tool_call', id: 'a2', name: 'ask', args: { q: 'two' } }) + '\n' +
      JSON.stringify({ type: 'tool_cancel', id: 'a2' }) + '\n',
  );
  await c.expect('notify', (f) => f.message === 'cancelled a2 aborted=true');
  // A later call is answered, and it is the only tool_result ever sent.
  c.send({ type: 'tool_call', id: 'e', name: 'echo', args: {} });
  await c.expect('tool_result', (f) => f.id === 'e');
  assert.deepEqual(c.frames.filter((f) => f.type === 'tool_result').map((f) => f.id), ['e']);
  await stop(c);
});

test('interactive tool: shutdown and end of input both cancel it', async () => {
  for (const how of ['shutdown', 'eof']) {
    const { c } = await started();
    c.send({ type: 'tool_call', id: 'a1', name: 'ask', args: { q: how } });
    await c.expect('open_panel');
    if (how === 'shutdown') {
      c.send({ type: 'shutdown' });
      await c.expect('shutdown_ack');
    } else {
      c.end();
    }
    const { code } = await c.exit();
    assert.equal(code, 0);
    assert.ok(!c.frames.some((f) => f.type === 'tool_result'), `${how}: no result after cancellation`);
    assert.ok(!c.frames.some((f) => f.type === 'notify'), `${how}: nothing written after the end`);
    assert.ok(c.stderr.includes('[kitchen] run resolved'), c.stderr);
  }
});

test('events: in order, async handlers awaited, replaced handler, throwing handler survives', async () => {
  const { c } = await started();
  c.send({ type: 'event', event: 'turn_start', step: 1 });
  c.send({ type: 'command_invoked', id: 'x', name: 'hi', args: 'after' });
  const { frame, skipped } = await c.next('command_response');
  assert.equal(frame.id, 'x');
  assert.deepEqual(skipped, [{ type: 'notify', level: 'info', message: 'turn 1' }], 'the event handler finished first');
  c.send({ type: 'event', event: 'session_opened', session: { id: 'b2', fork_point: 2 }, state: { v: 3 } });
  const sess = await c.expect('notify');
  assert.deepEqual(JSON.parse(sess.message.slice('session '.length)), {
    name: 'session_opened',
    session: { id: 'b2', forkPoint: 2 },
    state: { v: 3 },
  });
  c.send({ type: 'event', event: 'tool_call', tool_id: 't9', tool_name: 'read', tool_args: { path: 'a' } });
  assert.equal((await c.expect('notify')).message, 'tool event read {"path":"a"} t9');
  c.send({ type: 'event', event: 'turn_end', stop: 'end_turn' });
  await c.stderrHas('[kitchen] event turn_end handler failed: event broke');
  c.send({ type: 'event', event: 'not_subscribed' });
  c.send({ type: 'command_invoked', id: 'y', name: 'hi', args: 'still' });
  assert.equal((await c.expect('command_response')).display, 'hi still');
  assert.ok(!c.frames.some((f) => f.message === 'replaced handler must not run'));
  await stop(c);
});

test('interceptors: block, rewrite, context, replace, fail closed, allow', async () => {
  const { c } = await started();
  const ask = async (fields) => {
    const id = `i${Math.random()}`;
    c.send({ type: 'event_intercept', id, ...fields });
    const r = await c.expect('event_intercept_response', (f) => f.id === id);
    delete r.id;
    delete r.type;
    return r;
  };
  assert.deepEqual(await ask({ event: 'tool_call', tool_name: 'bash', tool_args: { command: 'rm -rf /' } }), { block: true, reason: 'no rm' });
  assert.deepEqual(await ask({ event: 'tool_call', tool_name: 'bash', tool_args: { command: 'ls' } }), {});
  assert.deepEqual(await ask({ event: 'tool_call', tool_name: 'rewrite', tool_args: {} }), { modified_args: { command: 'echo safe', timeout: 5 } });
  assert.deepEqual(await ask({ event: 'tool_call', tool_name: 'blockrewrite' }), { block: true, reason: 'both' });
  assert.deepEqual(await ask({ event: 'tool_call', tool_name: 'explode' }), { block: true, reason: 'intercept panic: interceptor broke' });
  assert.deepEqual(await ask({ event: 'turn_start', step: 3 }), { context: 'step 3' });
  assert.deepEqual(await ask({ event: 'turn_start', step: 99 }), { block: true, reason: 'too many steps' });
  assert.deepEqual(await ask({ event: 'assistant_message', text: 'my secret' }), { replace_text: 'my [redacted]' });
  assert.deepEqual(await ask({ event: 'assistant_message', text: 'nothing here' }), {}, 'unchanged text is not sent back');
  assert.deepEqual(await ask({ event: 'assistant_message', text: 'hide me' }), { block: true, reason: 'hidden' });
  assert.deepEqual(await ask({ event: 'assistant_message', text: 'boom' }), { block: true, reason: 'intercept panic: rejected intercept' });
  assert.deepEqual(await ask({ event: 'future_kind' }), {});
  await stop(c);
});

test('interceptors not registered: allow', async () => {
  const { c } = await started(['plain']);
  c.send({ type: 'event_intercept', id: 'q', event: 'tool_call', tool_name: 'bash' });
  assert.deepEqual(await c.expect('event_intercept_response'), { type: 'event_intercept_response', id: 'q' });
  await stop(c);
});

test('panels: keys and close reach the callbacks; unknown panels ignored', async () => {
  const { c } = await started();
  c.send({ type: 'panel_key', panel_id: 'p1', key: 'rune', text: 'x' });
  assert.deepEqual(await c.expect('panel_render'), { type: 'panel_render', panel_id: 'p1', title: 'Panel', lines: ['rune:x'], footer: 'footer' });
  c.send({ type: 'panel_key', panel_id: 'p1', key: 'down' });
  assert.deepEqual((await c.expect('panel_render')).lines, ['down:']);
  c.send({ type: 'panel_key', panel_id: 'elsewhere', key: 'enter' });
  c.send({ type: 'panel_resize', panel_id: 'p1', width: 10, height: 5 });
  c.send({ type: 'panel_close', panel_id: 'p1' });
  const { frame, skipped } = await c.next('notify');
  assert.equal(frame.message, 'closed p1');
  assert.deepEqual(skipped, [], 'nothing for the unknown panel or the resize');
  await stop(c);
});

test('runtime calls: every frame, whole, in call order', async () => {
  const { c } = await started();
  c.send({ type: 'command_invoked', id: 'r', name: 'runtime' });
  const { skipped } = await c.next('command_response');
  assert.deepEqual(skipped, [
    { type: 'notify', level: 'warn', message: 'careful' },
    { type: 'status', key: 's1', text: 'status text' },
    { type: 'status', key: 's2', level: 'success', text: 'leveled' },
    { type: 'status', key: 's1', text: '' },
    { type: 'widget', id: 'w1', position: 'above_input', title: 'Widget', lines: ['one', 'two'] },
    { type: 'widget', id: 'w2', position: 'above_input', title: 'Defaulted', lines: [] },
    { type: 'widget_clear', id: 'w1' },
    { type: 'alert', kind: 'bell', reason: 'question_ready' },
    { type: 'clear_notes' },
    { type: 'submit', text: 'submitted text' },
    { type: 'submit_slash', text: '/hi there' },
    { type: 'open_panel', panel: { id: 'p2', title: 'Spontaneous', lines: ['x'], footer: 'footer' } },
    { type: 'panel_render', panel_id: 'p2', title: 'Spontaneous 2', lines: ['y'], footer: '' },
    { type: 'panel_close', panel_id: 'p2' },
  ]);
  assert.equal((await c.expect('notify')).message, 'from a timer');
  assert.deepEqual(c.invalid, []);
  await stop(c);
});

test('log writes "[name] msg" to stderr, never stdout', async () => {
  const { c } = await started();
  c.send({ type: 'command_invoked', id: 'l', name: 'log', args: 'words' });
  await c.expect('command_response');
  await c.stderrHas('[kitchen] logged words\n');
  assert.deepEqual(c.invalid, []);
  await stop(c);
});

test('a registration after ready is announced at once (late registration)', async () => {
  const { c } = await started();
  c.send({ type: 'command_invoked', id: 'l', name: 'late' });
  const reg = await c.expect('register_tool');
  assert.equal(reg.name, 'too_late');
  await c.expect('command_response');
  c.send({ type: 'tool_call', id: 't', name: 'too_late', args: {} });
  assert.deepEqual((await c.expect('tool_result')).content, [{ type: 'text', text: 'x' }]);
  await stop(c);
});

test('bad lines are logged and skipped; the next request is answered', async () => {
  const { c } = await started();
  c.sendRaw('not json\n[1,2]\n{"no_type":1}\n\n{"type":"from_the_future","x":1}\r\n');
  c.send(helloAck({ protocol_version: 7 }));
  c.sendRaw('{"type":"command_invoked","id":"crlf","name":"hi","args":"r"}\r\n');
  assert.equal((await c.expect('command_response')).display, 'hi r');
  await c.stderrHas('unknown frame type "from_the_future"');
  assert.match(c.stderr, /malformed frame skipped: not json/);
  assert.match(c.stderr, /malformed frame skipped: not a json object/);
  assert.match(c.stderr, /malformed frame skipped: missing "type"/);
  await stop(c);
});

test('a frame split across writes is put back together', async () => {
  const { c } = await started();
  const line = JSON.stringify({ type: 'command_invoked', id: 's', name: 'hi', args: 'héllo wörld' }) + '\n';
  const bytes = Buffer.from(line);
  // Cut inside the two-byte é so the decoder must carry half a character.
  const cut = bytes.indexOf(0xc3) + 1;
  c.proc.stdin.write(bytes.subarray(0, cut));
  await new Promise((resolve) => setImmediate(resolve));
  c.proc.stdin.write(bytes.subarray(cut));
  assert.equal((await c.expect('command_response')).display, 'hi héllo wörld');
  await stop(c);
});

test('end of input: run resolves and the process exits 0', async () => {
  const { c } = await started();
  c.end();
  assert.equal((await c.exit()).code, 0);
  assert.ok(c.stderr.includes('[kitchen] run resolved'));
  assert.ok(!c.frames.some((f) => f.type === 'shutdown_ack'));
});

test('stdin closed before hello_ack: clean exit, nothing registered', async () => {
  const c = new Child(KITCHEN);
  await c.expect('hello');
  c.end();
  assert.equal((await c.exit()).code, 0);
  assert.deepEqual(c.frames.map((f) => f.type), ['hello']);
});

test('handshake failures: clear error, status 1, no registrations, no ready', async () => {
  const cases = [
    [helloAck({ protocol_version: 3 }), 'unsupported host protocol version 3 (want 2)'],
    [helloAck({ protocol_version: undefined }), 'unsupported host protocol version null (want 2)'],
    [{ type: 'command_invoked', id: '1', name: 'hi' }, 'first host frame must be hello_ack (got "command_invoked")'],
    ['this is not json', 'parse hello_ack: not json'],
  ];
  for (const [first, message] of cases) {
    const c = new Child(KITCHEN);
    await c.expect('hello');
    if (typeof first === 'string') c.sendRaw(first + '\n');
    else c.send(first);
    const { code } = await c.exit();
    assert.equal(code, 1, `${message}: ${c.stderr}`);
    assert.deepEqual(c.frames.map((f) => f.type), ['hello']);
    assert.ok(c.stderr.includes(`[kitchen] ${message}`), c.stderr);
    assert.ok(c.stderr.includes('run rejected: HandshakeError'), c.stderr);
  }
});

test('shutdown: ack, then nothing more, exit 0', async () => {
  const { c } = await started();
  c.send({ type: 'shutdown' });
  c.send({ type: 'command_invoked', id: 'after', name: 'hi' });
  await c.expect('shutdown_ack');
  assert.equal((await c.exit()).code, 0);
  assert.equal(c.frames[c.frames.length - 1].type, 'shutdown_ack');
});

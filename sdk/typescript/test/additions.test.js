// The schema builder, typed tools, the branch state helper, the protocol
// additions and UTF-8-only output, driven in-process over stream stand-ins.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const z = require('../dist/index.js');
const { s } = z;

/** An extension served over in-memory streams; the test plays the host. */
function host(setup) {
  const input = new EventEmitter();
  const raw = [];
  const waiters = [];
  const output = {
    write(line) {
      raw.push(line);
      for (const w of waiters.splice(0)) w();
      return true;
    },
  };
  const errors = { write() { return true; } };
  const ext = new z.Extension('t', '1', { input, output, errors });
  setup(ext);
  const done = ext.run();
  let pos = 0;
  const frames = () => raw.join('').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  return {
    ext,
    raw,
    send: (f) => input.emit('data', JSON.stringify(f) + '\n'),
    async next() {
      const deadline = Date.now() + 5000;
      while (frames().length <= pos) {
        if (Date.now() > deadline) throw new Error('no frame arrived');
        await new Promise((r) => { waiters.push(r); setTimeout(r, 50); });
      }
      return frames()[pos++];
    },
    async until(type) {
      for (;;) {
        const f = await this.next();
        if (f.type === type) return f;
      }
    },
    end() {
      input.emit('end');
      return done;
    },
  };
}

const ACK = { type: 'hello_ack', protocol_version: 2, features: ['late_registration', 'tool_progress'] };

test('the builder writes plain JSON Schema and infers optional fields', () => {
  const schema = s.object({
    city: s.string().describe('where'),
    days: s.optional(s.integer()),
    units: s.enum(['c', 'f']),
    stops: s.array(s.object({ lat: s.number(), lon: s.number() })),
    live: s.optional(s.boolean()),
  });
  assert.deepEqual(schema.json, {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'where' },
      days: { type: 'integer' },
      units: { enum: ['c', 'f'] },
      stops: { type: 'array', items: { type: 'object', properties: { lat: { type: 'number' }, lon: { type: 'number' } }, required: ['lat', 'lon'] } },
      live: { type: 'boolean' },
    },
    required: ['city', 'units', 'stops'],
  });
  assert.equal(schema.check({ city: 'x', units: 'c', stops: [] }, ''), undefined);
  assert.equal(schema.check({ city: 'x', units: 'k', stops: [] }, ''), 'field "units" must be one of "c", "f"');
  assert.equal(schema.check({ city: 'x', units: 'c', stops: [{ lat: 1 }] }, ''), 'missing required field "stops[0].lon"');
  assert.equal(schema.check({ city: 'x', units: 'c', stops: [{ lat: 1, lon: 'e' }] }, ''), 'field "stops[0].lon" must be number, got string');
  assert.equal(schema.check({ city: 'x', units: 'c', stops: [], days: 1.5 }, ''), 'field "days" must be integer, got number');
});

test('a typed tool never sees invalid arguments; the error names the field', async () => {
  const seen = [];
  const h = host((ext) => {
    ext.tool('add', 'adds', s.object({ a: s.number(), b: s.number() }), (args, ctx) => {
      seen.push([args, ctx.id]);
      return z.textResult(String(args.a + args.b));
    });
  });
  h.send(ACK);
  assert.deepEqual((await h.until('register_tool')).schema.required, ['a', 'b']);
  h.send({ type: 'tool_call', id: '1', name: 'add', args: { a: 1, b: 2 } });
  assert.deepEqual((await h.until('tool_result')).content, [{ type: 'text', text: '3' }]);
  h.send({ type: 'tool_call', id: '2', name: 'add', args: { a: 1 } });
  const bad = await h.until('tool_result');
  assert.equal(bad.is_error, true);
  assert.equal(bad.content[0].text, 'invalid arguments for add: missing required field "b"');
  assert.deepEqual(seen, [[{ a: 1, b: 2 }, '1']]);
  await h.end();
});

test('progress, features, late (un)registration and late intercepts', async () => {
  const h = host((ext) => {
    ext.tool('work', '', { type: 'object' }, (args, ctx) => {
      ctx.progress('half', 1, 2);
      ctx.progress();
      return z.textResult('done');
    });
  });
  h.send(ACK);
  await h.until('ready');
  assert.deepEqual(h.ext.host.features, ['late_registration', 'tool_progress']);
  h.send({ type: 'tool_call', id: 'w1', name: 'work', args: {} });
  assert.deepEqual(await h.next(), { type: 'tool_progress', id: 'w1', message: 'half', progress: 1, total: 2 });
  assert.deepEqual(await h.next(), { type: 'tool_progress', id: 'w1' });
  assert.equal((await h.next()).type, 'tool_result');
  h.ext.command('later', 'after ready', () => z.display('hi'));
  assert.deepEqual(await h.next(), { type: 'register_command', name: 'later', description: 'after ready' });
  h.ext.interceptAgentEnd(() => ({}));
  assert.deepEqual(await h.next(), { type: 'subscribe', events: [], intercept: ['agent_end'] });
  h.ext.unregisterTool('work');
  assert.deepEqual(await h.next(), { type: 'unregister_tool', name: 'work' });
  h.send({ type: 'tool_call', id: 'w2', name: 'work', args: {} });
  assert.equal((await h.until('tool_result')).is_error, true);
  await h.end();
});

test('tool_result interceptor sees the payload; a block drops every rewrite', async () => {
  const seen = [];
  const h = host((ext) => {
    ext.interceptToolResult((ev) => {
      seen.push(ev);
      return { block: true, reason: 'no', replaceContent: [z.text('x')], context: 'c' };
    });
    ext.interceptToolCall(() => ({ block: true, reason: 'r', decision: 'approve' }));
  });
  h.send(ACK);
  await h.until('ready');
  h.send({ type: 'event_intercept', id: '1', event: 'tool_result', tool_id: 'c', tool_name: 'bash', tool_args: {}, is_error: true, content: [{ type: 'text', text: 'out' }], extension: 'x' });
  assert.deepEqual(await h.next(), { type: 'event_intercept_response', id: '1', block: true, reason: 'no' });
  assert.deepEqual([seen[0].toolName, seen[0].isError, seen[0].extension, seen[0].content], ['bash', true, 'x', [{ type: 'text', text: 'out' }]]);
  h.send({ type: 'event_intercept', id: '2', event: 'tool_call', tool_name: 'bash', tool_args: {} });
  assert.deepEqual(await h.next(), { type: 'event_intercept_response', id: '2', block: true, reason: 'r' });
  await h.end();
});

test('branch state: explicit details become the state; unchanged state is not resent', async () => {
  let st;
  const h = host((ext) => {
    st = ext.state([]);
    ext.tool('save', '', { type: 'object' }, () => ({ ...z.textResult('s'), details: ['a'] }));
    ext.tool('look', '', { type: 'object' }, () => z.textResult(JSON.stringify(st.value)));
  });
  h.send(ACK);
  assert.deepEqual((await h.until('subscribe')).events, ['session_opened', 'session_switched', 'session_forked', 'session_compacted']);
  h.send({ type: 'tool_call', id: '1', name: 'save', args: {} });
  assert.deepEqual((await h.until('tool_result')).details, ['a']);
  h.send({ type: 'tool_call', id: '2', name: 'look', args: {} });
  const r = await h.until('tool_result');
  assert.equal(r.content[0].text, '["a"]');
  assert.equal('details' in r, false);
  h.send({ type: 'event', event: 'session_compacted', session: { id: 'b' }, state: null });
  h.send({ type: 'tool_call', id: '3', name: 'look', args: {} });
  assert.equal((await h.until('tool_result')).content[0].text, '[]');
  await h.end();
});

test('lone surrogates never reach the wire: every line is UTF-8 JSON', async () => {
  const lone = 'caf\udce9 \ud800x \udfff';
  const h = host((ext) => {
    ext.tool('ls', '', { type: 'object' }, () => ({ ...z.textResult(lone), details: { [lone]: [lone] } }));
  });
  h.send(ACK);
  h.send({ type: 'tool_call', id: '1', name: 'ls', args: {} });
  const r = await h.until('tool_result');
  const line = h.raw.find((l) => l.includes('"tool_result"'));
  assert.ok(!/\\ud[89a-f]/i.test(line), `no surrogate escape in ${line}`);
  const bytes = Buffer.from(line, 'utf8');
  assert.equal(new TextDecoder('utf-8', { fatal: true }).decode(bytes), line);
  assert.equal(r.content[0].text, 'caf\ufffd \ufffdx \ufffd');
  assert.deepEqual(r.details, { 'caf\ufffd \ufffdx \ufffd': ['caf\ufffd \ufffdx \ufffd'] });
  // A valid pair (an emoji) is left alone.
  assert.equal(JSON.parse(z.encodeFrame({ type: 'notify', level: 'info', message: '\ud83d\ude00' })).message, '😀');
  await h.end();
});

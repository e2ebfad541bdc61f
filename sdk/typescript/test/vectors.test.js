// The shared protocol vectors (sdk/vectors, or $ZUT_VECTORS_DIR): the frame
// decoder and encoder against frames.json, and every conversation against an
// extension built from its declaration (testkit/fixtures/vector-ext.js),
// run as a real child process.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const z = require('../dist/index.js');
const { Child, FIXTURES } = require('../testkit/harness');

const DIR = process.env.ZUT_VECTORS_DIR || path.join(__dirname, '..', '..', 'vectors');
const FRAMES = path.join(DIR, 'frames.json');
const CONVERSATIONS = path.join(DIR, 'conversations');

// Missing vectors are a failure, never a silent pass.
test('the shared vectors are present', () => {
  assert.ok(fs.existsSync(FRAMES), `no ${FRAMES}: set ZUT_VECTORS_DIR to the sdk/vectors directory`);
  assert.ok(fs.existsSync(CONVERSATIONS), `no ${CONVERSATIONS}`);
  assert.ok(fs.readdirSync(CONVERSATIONS).some((f) => f.endsWith('.json')), `no conversations in ${CONVERSATIONS}`);
});

const frames = fs.existsSync(FRAMES) ? JSON.parse(fs.readFileSync(FRAMES, 'utf8')) : [];
const conversations = fs.existsSync(CONVERSATIONS)
  ? fs.readdirSync(CONVERSATIONS).filter((f) => f.endsWith('.json')).sort()
  : [];

for (const v of frames) {
  test(`frame ${v.direction} ${v.name}`, () => {
    if (v.direction === 'host_to_ext') {
      if (v.valid) {
        const frame = z.decodeFrame(v.line);
        assert.equal(frame.type, v.type, v.note);
      } else {
        assert.throws(() => z.decodeFrame(v.line), z.FrameError, v.note);
      }
    } else {
      const again = z.encodeFrame(JSON.parse(v.line));
      assert.ok(!again.includes('\n'), 'one frame is one line');
      assert.deepEqual(JSON.parse(again), JSON.parse(v.line), v.note);
    }
  });
}

/** Pattern match: objects as subsets, arrays element by element, "<any>" matches anything. */
function matches(pattern, value, where = '$') {
  if (pattern === '<any>') return null;
  if (Array.isArray(pattern)) {
    if (!Array.isArray(value) || value.length !== pattern.length) return `${where}: want ${JSON.stringify(pattern)}, got ${JSON.stringify(value)}`;
    for (let i = 0; i < pattern.length; i++) {
      const m = matches(pattern[i], value[i], `${where}[${i}]`);
      if (m) return m;
      if (pattern[i] && typeof pattern[i] === 'object' && !Array.isArray(pattern[i]) &&
          Object.keys(value[i]).length !== Object.keys(pattern[i]).length) {
        return `${where}[${i}]: want exactly ${JSON.stringify(pattern[i])}, got ${JSON.stringify(value[i])}`;
      }
    }
    return null;
  }
  if (pattern !== null && typeof pattern === 'object') {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return `${where}: want an object, got ${JSON.stringify(value)}`;
    for (const k of Object.keys(pattern)) {
      if (!(k in value)) return `${where}.${k}: missing`;
      const m = matches(pattern[k], value[k], `${where}.${k}`);
      if (m) return m;
    }
    return null;
  }
  return pattern === value ? null : `${where}: want ${JSON.stringify(pattern)}, got ${JSON.stringify(value)}`;
}

test('the pattern matcher can fail', () => {
  assert.equal(matches({ a: 1 }, { a: 1, b: 2 }), null);
  assert.notEqual(matches({ a: 1 }, { a: 2 }), null);
  assert.notEqual(matches([1], [1, 2]), null);
  assert.notEqual(matches([{ a: 1 }], [{ a: 1, b: 2 }]), null);
  assert.equal(matches({ a: '<any>' }, { a: [1] }), null);
  assert.notEqual(matches({ a: '<any>' }, {}), null);
});

for (const file of conversations) {
  const conv = JSON.parse(fs.readFileSync(path.join(CONVERSATIONS, file), 'utf8'));
  test(`conversation ${file}: ${conv.note || conv.name}`, async () => {
    const c = new Child(path.join(FIXTURES, 'vector-ext.js'), [path.join(CONVERSATIONS, file)]);
    try {
      let noneOf = null;
      for (const step of conv.steps) {
        if ('send' in step) {
          c.send(step.send);
        } else if ('expect' in step) {
          const got = await c.expect(step.expect.type);
          const m = matches(step.expect, got);
          assert.equal(m, null, `${m}\nframe: ${JSON.stringify(got)}\nstderr: ${c.stderr}`);
        } else if ('expect_none_before' in step) {
          noneOf = step.expect_none_before;
        } else {
          assert.fail(`unknown step ${JSON.stringify(step)}`);
        }
      }
      c.end();
      const { code } = await c.exit();
      if (noneOf) {
        const seen = c.frames.slice(c.pos).filter((f) => f.type === noneOf);
        assert.deepEqual(seen, [], `no "${noneOf}" frame may follow`);
      }
      if (conv.exit === 'error') assert.notEqual(code, 0, `must fail; stderr: ${c.stderr}`);
      else assert.equal(code, 0, `must exit cleanly; stderr: ${c.stderr}`);
      assert.deepEqual(c.invalid, [], 'stdout carries frames only');
    } finally {
      c.kill();
    }
  });
}

// The host side of the tests: starts an extension as a real child process
// and talks to it over its stdin/stdout pipes, the way zut does.
//
// Frames the extension writes are kept in order; `expect(type)` moves a
// cursor to the next frame of that type (frames of other types in between
// are passed over and returned, so a test can check them). Every wait has a
// deadline, so a silent extension fails the test instead of hanging it.
'use strict';

const { spawn } = require('node:child_process');
const path = require('node:path');

/** The built SDK, as extensions load it. */
const SDK = path.join(__dirname, '..', 'dist', 'index.js');
const FIXTURES = path.join(__dirname, 'fixtures');
const WAIT_MS = 10000;

/** A well-formed hello_ack, with `over` fields replacing the defaults. */
function helloAck(over = {}) {
  return {
    type: 'hello_ack',
    protocol_version: 2,
    zut_version: '0.1.0-test',
    provider: 'script',
    model: 'test-model',
    cwd: '/tmp/project',
    extension_dir: '/tmp/ext',
    data_dir: '/tmp/ext',
    ...over,
  };
}

class Child {
  /**
   * @param {string} script path of the extension's entry point (run with node)
   * @param {string[]} [args] extra argv
   * @param {Record<string,string>} [env] extra environment
   */
  constructor(script, args = [], env = {}) {
    this.proc = spawn(process.execPath, [script, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
      cwd: path.dirname(script),
    });
    this.frames = [];
    this.pos = 0;
    this.stderr = '';
    this.invalid = [];
    this.waiters = new Set();
    let pending = '';
    this.proc.stdout.setEncoding('utf8');
    this.proc.stdout.on('data', (chunk) => {
      pending += chunk;
      let nl;
      while ((nl = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        try {
          const v = JSON.parse(line);
          if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
          this.frames.push(v);
        } catch (err) {
          this.invalid.push(line);
        }
      }
      this.wake();
    });
    this.proc.stderr.setEncoding('utf8');
    this.proc.stderr.on('data', (chunk) => {
      this.stderr += chunk;
      this.wake();
    });
    // Writing to a child that already exited is part of some tests.
    this.proc.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      this.proc.on('close', (code, signal) => {
        this.closed = { code, signal };
        this.wake();
        resolve(this.closed);
      });
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves when `ready()` returns a value other than undefined. */
  waitFor(what, ready, ms = WAIT_MS) {
    return new Promise((resolve, reject) => {
      const check = () => {
        let v;
        try {
          v = ready();
        } catch (err) {
          finish();
          reject(err);
          return;
        }
        if (v !== undefined) {
          finish();
          resolve(v);
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(this.frames.slice(this.pos))}; stderr: ${this.stderr}`));
      }, ms);
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /**
   * The next frame of `type` (and matching `pred`, if given) after the
   * cursor; moves the cursor past it. Returns { frame, skipped }.
   */
  async next(type, pred = () => true, ms = WAIT_MS) {
    return this.waitFor(`a "${type}" frame`, () => {
      for (let i = this.pos; i < this.frames.length; i++) {
        const f = this.frames[i];
        if (f.type === type && pred(f)) {
          const skipped = this.frames.slice(this.pos, i);
          this.pos = i + 1;
          return { frame: f, skipped };
        }
      }
      if (this.closed) throw new Error(`extension exited (${JSON.stringify(this.closed)}) before a "${type}" frame; stderr: ${this.stderr}`);
      return undefined;
    }, ms);
  }

  /** Shorthand for `next(type, pred).frame`. */
  async expect(type, pred) {
    return (await this.next(type, pred)).frame;
  }

  /** The next frame whatever its type. */
  async any(ms = WAIT_MS) {
    return this.waitFor('any frame', () => {
      if (this.pos < this.frames.length) return this.frames[this.pos++];
      if (this.closed) throw new Error(`extension exited before another frame; stderr: ${this.stderr}`);
      return undefined;
    }, ms);
  }

  /** Resolves once stderr contains `text`. */
  async stderrHas(text, ms = WAIT_MS) {
    return this.waitFor(`stderr to contain ${JSON.stringify(text)}`, () => (this.stderr.includes(text) ? true : undefined), ms);
  }

  send(frame) {
    this.proc.stdin.write(JSON.stringify(frame) + '\n');
  }

  sendRaw(text) {
    this.proc.stdin.write(text);
  }

  end() {
    this.proc.stdin.end();
  }

  kill() {
    if (!this.closed) this.proc.kill('SIGKILL');
  }

  /** Waits for exit (with a deadline) and returns { code, signal }. */
  async exit(ms = WAIT_MS) {
    return this.waitFor('the extension to exit', () => this.closed, ms);
  }

  /** Reads hello, answers it, and reads up to ready; returns the frames in between. */
  async handshake(ackOver = {}) {
    const hello = await this.expect('hello');
    this.send(helloAck(ackOver));
    const { skipped } = await this.next('ready');
    return { hello, announced: skipped };
  }
}

module.exports = { Child, helloAck, SDK, FIXTURES, WAIT_MS };

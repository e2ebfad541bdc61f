#!/usr/bin/env node
// clock-node: two slash commands and a status item, in plain Node.
//
// Frames are single-line JSON objects: we write ours on stdout and read the
// host's on stdin, one per line. stdout carries nothing else; diagnostics go
// to stderr, which zut appends to $ZUT_HOME/logs/ext-clock-node.log.
//
//   /now      display the local time and the ISO 8601 (UTC) time
//   /uptime   display how long this extension has been running
//   status    on start, a persistent status item with key "clock"
'use strict';

const readline = require('node:readline');

const NAME = 'clock-node';
const VERSION = '1.0.0';
const PROTOCOL_VERSION = 2;
const started = new Date();

function emit(frame) {
  // JSON.stringify never emits a raw newline, so one frame is one line.
  process.stdout.write(JSON.stringify(frame) + '\n');
}

function log(message) {
  process.stderr.write(`[${NAME}] ${message}\n`);
}

// Ends the process once everything written to stdout has been handed over.
function exitAfterFlush(code) {
  process.stdout.write('', () => process.exit(code));
}

function respond(id, action, fields) {
  emit({ type: 'command_response', id, action, ...fields });
}

function onCommand(frame) {
  const name = String(frame.name || '').toLowerCase();
  switch (name) {
    case 'now': {
      const now = new Date();
      respond(frame.id, 'display', {
        display: `local: ${now.toString()}\niso  : ${now.toISOString()}`,
      });
      break;
    }
    case 'uptime': {
      const seconds = Math.floor((Date.now() - started.getTime()) / 1000);
      respond(frame.id, 'display', {
        display: `up ${seconds} s (since ${started.toISOString()})`,
      });
      break;
    }
    default:
      respond(frame.id, 'noop', { error: `${NAME} has no command /${name}` });
  }
}

function onFrame(frame) {
  switch (frame.type) {
    case 'hello_ack':
      if (frame.protocol_version !== PROTOCOL_VERSION) {
        log(`unsupported protocol version ${frame.protocol_version}`);
        exitAfterFlush(1);
        return;
      }
      emit({ type: 'register_command', name: 'now', description: 'show the local and ISO time' });
      emit({ type: 'register_command', name: 'uptime', description: 'seconds since the clock started' });
      emit({ type: 'ready' });
      // Runtime frames may follow ready. A status item stays until it is
      // replaced (same key) or cleared (empty text) or we exit.
      emit({
        type: 'status',
        key: 'clock',
        level: 'info',
        text: `clock started ${started.toLocaleTimeString()}`,
      });
      break;
    case 'command_invoked':
      onCommand(frame);
      break;
    case 'shutdown':
      emit({ type: 'shutdown_ack' });
      exitAfterFlush(0);
      break;
    default:
      log(`ignoring frame ${JSON.stringify(frame.type)}`);
  }
}

// The first line on stdout must be hello.
emit({
  type: 'hello',
  protocol_version: PROTOCOL_VERSION,
  name: NAME,
  version: VERSION,
  capabilities: ['commands', 'status'],
});

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  let frame;
  try {
    frame = JSON.parse(line);
  } catch (err) {
    log(`ignoring a line that is not JSON: ${err.message}`);
    return;
  }
  onFrame(frame);
});
// stdin closed without a shutdown frame: the host went away.
lines.on('close', () => exitAfterFlush(0));
// If the host has already gone, writing fails with EPIPE: just leave.
process.stdout.on('error', () => process.exit(0));

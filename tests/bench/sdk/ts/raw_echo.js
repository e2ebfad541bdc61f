// Benchmark input: tool `echo` written by hand against the wire protocol, as
// small as it can be; the baseline sdk_echo.js is measured against.
'use strict';

const emit = (frame) => process.stdout.write(JSON.stringify(frame) + '\n');

emit({ type: 'hello', protocol_version: 2, name: 'raw-echo-ts', version: '1.0.0', capabilities: ['tools'] });

let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let nl;
  while ((nl = pending.indexOf('\n')) !== -1) {
    const msg = JSON.parse(pending.slice(0, nl));
    pending = pending.slice(nl + 1);
    if (msg.type === 'hello_ack') {
      if (msg.protocol_version !== 2) {
        process.stderr.write('raw-echo-ts: unsupported protocol version\n');
        process.exit(1);
      }
      emit({ type: 'register_tool', name: 'echo', description: 'echo the arguments back', schema: { type: 'object' } });
      emit({ type: 'ready' });
    } else if (msg.type === 'tool_call') {
      emit({ type: 'tool_result', id: msg.id, content: [{ type: 'text', text: JSON.stringify(msg.args || {}) }] });
    } else if (msg.type === 'shutdown') {
      emit({ type: 'shutdown_ack' });
      process.exit(0);
    }
  }
});

// Benchmark input: tool `echo` (answers its arguments as compact JSON text)
// through the TypeScript SDK; raw_echo.js is the same by hand, the baseline.
'use strict';

const path = require('node:path');
const z = require(path.join(__dirname, '..', '..', '..', '..', 'sdk', 'typescript', 'dist', 'index.js'));

const ext = new z.Extension('sdk-echo-ts', '1.0.0');
ext.tool('echo', 'echo the arguments back', { type: 'object' }, (args) => z.textResult(JSON.stringify(args)));
ext.run();

#!/usr/bin/env node
// @ts-check
// @NAME@: a zut extension.
//
//   /@NAME@ [who]   shows "hello, <who> from @NAME@" (no model call)
//   @TOOL@          a tool the model can call; returns its arguments as text
//
// zut-ext.js beside this file is the zut TypeScript SDK, compiled to plain
// JavaScript (zut-ext.d.ts holds its types, which `// @ts-check` and editors
// use): node runs this file as it is, nothing to install or build. stdout
// carries protocol frames; log with console.error, which zut keeps in
// $ZUT_HOME/logs/ext-@NAME@.log.
'use strict';

const zx = require('./zut-ext.js');

const ext = new zx.Extension('@NAME@', '0.1.0'); // the name must match extension.json

ext.command('@NAME@', 'say hello: /@NAME@ [who]', (args) =>
  zx.display(`hello, ${args || 'you'} from @NAME@`));

ext.tool('@TOOL@', 'Return the arguments of the call as JSON text.', { type: 'object' },
  (args) => zx.textResult(JSON.stringify(args)));

ext.run().catch((err) => {
  console.error(`@NAME@: ${err && err.message ? err.message : err}`);
  process.exit(1);
});

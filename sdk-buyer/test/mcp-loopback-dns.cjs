// Preloaded (node --require) into the stdio bin under test: the tutorial sellers' domains end in `.test` (RFC 2606)
// and resolve nowhere, so this sends those names to 127.0.0.1, where the seller's app listens (the in-process tests
// use loopbackFetch from test/support/marketplace.ts for the same purpose). Everything else resolves unchanged.
const dns = require('node:dns');
const lookup = dns.lookup;
dns.lookup = function loopbackTestDomains(hostname, options, callback) {
  if (typeof hostname === 'string' && hostname.endsWith('.test')) hostname = '127.0.0.1';
  return lookup.call(this, hostname, options, callback);
};

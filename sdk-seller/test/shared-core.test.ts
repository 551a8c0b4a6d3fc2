import fs from 'node:fs';
import path from 'node:path';

/**
 * Each SDK ships its own copy of src/core (errors, HTTP middleware, pagination) so that either package installs
 * alone. The copies must not drift: a change to one is made to both.
 */
describe('the shared SDK core', () => {
  const buyer = path.resolve(__dirname, '../../sdk-buyer/src/core');
  const seller = path.resolve(__dirname, '../src/core');
  it('is byte-identical in the buyer and seller packages', () => {
    const files = fs.readdirSync(buyer).sort();
    expect(fs.readdirSync(seller).sort()).toEqual(files);
    for (const f of files) expect(fs.readFileSync(path.join(seller, f), 'utf8')).toBe(fs.readFileSync(path.join(buyer, f), 'utf8'));
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { RULES } from '../../src/domain/facilitator/rules/catalog';

describe('the rule list is documented', () => {
  // The rule table lives in server/README.md ("Payment guarantees"), the service's manual.
  const readme = fs.readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');

  it("server/README.md's Payment guarantees table names every rule with its code and x402 reason", () => {
    for (const rule of Object.values(RULES)) {
      expect(readme).toContain(`| \`${rule.id}\` |`);
      const row = readme.split('\n').find((l) => l.startsWith(`| \`${rule.id}\` |`))!;
      expect(row).toContain(`\`${rule.code}\``);
      expect(row).toContain(`\`${rule.x402Reason}\``);
    }
  });

  it('rule ids are unique', () => {
    const ids = Object.values(RULES).map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

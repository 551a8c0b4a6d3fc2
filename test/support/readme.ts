import fs from 'node:fs';

/** The ```ts blocks of a README, each line trimmed (indentation may differ where a test embeds them). */
export function readmeBlocks(readmePath: string): string[] {
  const text = fs.readFileSync(readmePath, 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => normalize(m[1]));
}

export function normalize(code: string): string {
  return code
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join('\n');
}

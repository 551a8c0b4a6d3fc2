import fs from 'node:fs';
import type { Logger } from '../logger';

/** How often the operator key file is checked for a change (fs.watchFile polling: works on every file system). */
export const OPERATOR_KEY_FILE_POLL_MS = 1_000;
/** Shortest operator key accepted (the same bound as OPERATOR_API_KEY). */
const MIN_KEY_LENGTH = 24;

/**
 * The operator keys the service accepts, rotatable without a restart.
 *
 * - `OPERATOR_API_KEY` (and, during a rotation done through the environment, `OPERATOR_API_KEY_PREVIOUS`): fixed
 *   for the life of the process; a rolling restart moves to the new pair.
 * - Otherwise the operator key file (data folder `operator-api-key`, generated on first start): every non-empty line
 *   is an accepted key. To rotate without a restart, append the new key as a second line, move the clients to it,
 *   then delete the old line. Every process re-reads the file within OPERATOR_KEY_FILE_POLL_MS of a change (and on
 *   SIGHUP, through `reload`). A file that cannot be read, or holds no valid key, keeps the keys read before.
 */
export class OperatorKeyRing {
  private current: readonly string[];
  private watching = false;

  constructor(
    private readonly source: { fixed: string[] } | { file: string },
    private readonly logger?: Logger,
  ) {
    this.current = 'fixed' in source ? source.fixed.filter(Boolean) : [];
    if ('file' in source) this.reload();
  }

  /** The keys accepted now. */
  keys = (): readonly string[] => this.current;

  /** Re-reads the key file (no-op for fixed keys). */
  reload(): void {
    if (!('file' in this.source)) return;
    let text: string;
    try {
      text = fs.readFileSync(this.source.file, 'utf8');
    } catch {
      this.logger?.warn('operator key file could not be read; keeping the keys read before', {
        file: this.source.file,
      });
      return;
    }
    const keys = text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l.length >= MIN_KEY_LENGTH && !l.startsWith('#'));
    if (keys.length === 0) {
      this.logger?.warn('operator key file holds no key; keeping the keys read before', { file: this.source.file });
      return;
    }
    if (this.current.length && keys.join('\n') !== this.current.join('\n'))
      this.logger?.info('operator keys reloaded', { file: this.source.file, keys: keys.length });
    this.current = keys;
  }

  /** Re-reads the key file whenever it changes. */
  watch(): this {
    if (!('file' in this.source) || this.watching) return this;
    this.watching = true;
    fs.watchFile(this.source.file, { interval: OPERATOR_KEY_FILE_POLL_MS, persistent: false }, () => this.reload());
    return this;
  }

  close(): void {
    if ('file' in this.source && this.watching) fs.unwatchFile(this.source.file);
    this.watching = false;
  }
}

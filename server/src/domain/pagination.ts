import { DomainError } from './errors';

/**
 * Cursor paging over creation-sortable ids, newest first. The cursor is opaque to clients: the base64url of the
 * last id of the page. Pages never skip or repeat rows, even while rows are inserted.
 */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface PageRequest {
  cursor?: string;
  limit?: number;
}

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export function decodeCursor(cursor: string | undefined): string | null {
  if (cursor === undefined || cursor === '') return null;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[a-z]{3}_[0-9A-HJKMNP-TV-Z]{26}$/.test(id))
    throw new DomainError('INVALID_REQUEST', 'cursor is not valid', [
      { field: 'cursor', message: 'not a cursor this API issued' },
    ]);
  return id;
}

export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  return Math.min(Math.max(1, Math.trunc(limit)), MAX_LIMIT);
}

/** Given up to limit+1 rows, the page and its cursor. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  const nextCursor = rows.length > limit ? Buffer.from(items[items.length - 1].id, 'utf8').toString('base64url') : null;
  return { items, nextCursor };
}

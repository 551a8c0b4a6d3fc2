import { RpcError } from './rpc-error';

/** One contract event as getEvents returns it (raw JSON shape of the real RPC). */
export interface EventRecord {
  type: 'contract';
  id: string;
  ledger: number;
  ledgerClosedAt: string;
  transactionIndex: number;
  operationIndex: number;
  inSuccessfulContractCall: boolean;
  txHash: string;
  contractId: string;
  topic: string[];
  value: string;
}

export interface EventFilter {
  type?: string;
  contractIds?: string[];
  topics?: string[][];
}

export interface EventQuery {
  startLedger?: number;
  endLedger?: number;
  filters: EventFilter[];
  cursor?: string;
  limit: number;
}

const pad = (n: bigint | number, width: number): string => n.toString().padStart(width, '0');

/** The real RPC's event id: the operation's TOID (19 digits) and the event's index in it (10 digits). */
export function eventId(ledger: number, transactionIndex: number, operationIndex: number, eventIndex: number): string {
  const toid = (BigInt(ledger) << 32n) | (BigInt(transactionIndex) << 12n) | BigInt(operationIndex);
  return `${pad(toid, 19)}-${pad(eventIndex, 10)}`;
}

function topicsMatch(filter: string[], topics: string[]): boolean {
  for (let i = 0; i < filter.length; i += 1) {
    if (filter[i] === '**') return true;
    if (i >= topics.length) return false;
    if (filter[i] !== '*' && filter[i] !== topics[i]) return false;
  }
  return filter.length === topics.length;
}

function matches(filter: EventFilter, event: EventRecord): boolean {
  if (filter.type && filter.type !== event.type) return false;
  if (filter.contractIds?.length && !filter.contractIds.includes(event.contractId)) return false;
  if (filter.topics?.length && !filter.topics.some((t) => topicsMatch(t, event.topic))) return false;
  return true;
}

/** Filters stored events (ascending by id) the way getEvents does, returning the page and its cursor. */
export function queryEvents(events: EventRecord[], query: EventQuery): { events: EventRecord[]; cursor: string } {
  if (query.filters.length > 5) throw new RpcError(RpcError.invalidParams, 'maximum 5 filters per request');
  const page: EventRecord[] = [];
  for (const event of events) {
    if (query.cursor !== undefined ? event.id <= query.cursor : event.ledger < (query.startLedger ?? 0)) continue;
    if (query.endLedger !== undefined && event.ledger >= query.endLedger) break;
    if (query.filters.length > 0 && !query.filters.some((f) => matches(f, event))) continue;
    page.push(event);
    if (page.length >= query.limit) break;
  }
  return { events: page, cursor: page.length > 0 ? page[page.length - 1].id : (query.cursor ?? '') };
}

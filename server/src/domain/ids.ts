import { ulid } from 'ulid';

/** Prefixed, unguessable (80 random bits), creation-sortable identifiers. */
export const ID_PREFIXES = {
  resource: 'res',
  seller: 'sel',
  version: 'ver',
  payment: 'pay',
  settlement: 'stl',
  receipt: 'rcp',
  catalogEvent: 'cev',
  apiKey: 'key',
  challenge: 'chl',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${ulid()}`;
}

export function isId(kind: IdKind, value: string): boolean {
  return new RegExp(`^${ID_PREFIXES[kind]}_[0-9A-HJKMNP-TV-Z]{26}$`).test(value);
}

/**
 * GENERATED FILE: DO NOT EDIT. Source: server/src/domain/facilitator/js-xdr.d.ts, copied by scripts/generate.mjs.
 * Change the source and run `npm run generate` (`npm run check:generated` fails when this copy differs).
 */
/** The part of @stellar/js-xdr 3.x (no type declarations of its own) that cap71-xdr.ts uses. */
declare module '@stellar/js-xdr' {
  export interface TypeBuilder {
    struct(name: string, fields: Array<[string, unknown]>): void;
    varArray(child: unknown, maxLength: number): unknown;
    lookup(name: string): unknown;
  }
  export function config(fn: (builder: TypeBuilder) => void, types: Record<string, unknown>): Record<string, unknown>;
}

import type { operations } from '../generated/openapi';
import type { Principal } from '../domain/auth/principal';

/**
 * Handler types derived from the generated `operations`: a handler's params, query, body and every response it
 * may return are the contract's, so a missing handler, a misspelt operationId or a body of the wrong shape is a
 * compile error.
 */
export type OperationId = keyof operations;
type Op<K extends OperationId> = operations[K];

type Content<T> = T extends { content: { 'application/json': infer B } }
  ? B
  : T extends { content: { 'text/plain': infer B } }
    ? B
    : T extends { content: { 'text/plain; version=0.0.4': infer B } }
      ? B
      : never;

export type RequestBody<K extends OperationId> =
  Op<K> extends { requestBody: infer RB }
    ? Content<RB>
    : Op<K> extends { requestBody?: infer RB }
      ? Content<NonNullable<RB>> | undefined
      : undefined;

export type PathParams<K extends OperationId> = Op<K>['parameters'] extends { path: infer P }
  ? P
  : Record<string, never>;
export type QueryParams<K extends OperationId> = Op<K>['parameters'] extends { query?: infer Q }
  ? NonNullable<Q>
  : Record<string, never>;

/** Statuses a handler returns itself; every error status is produced by throwing a DomainError. */
type HandlerStatus = 200 | 201 | 202 | 503;
type Responses<K extends OperationId> = Op<K>['responses'];

export type HandlerResult<K extends OperationId> = {
  [S in keyof Responses<K> & HandlerStatus]: {
    status: S;
    body: Content<Responses<K>[S]>;
    headers?: Record<string, string>;
  };
}[keyof Responses<K> & HandlerStatus];

export interface HandlerContext<K extends OperationId> {
  params: PathParams<K>;
  query: QueryParams<K>;
  body: RequestBody<K>;
  principal: Principal;
  requestId: string;
  header(name: string): string | undefined;
  /** The caller's address as Express sees it (req.ip): the party a client-address budget or queue place is charged to.
   * */
  clientAddress: string;
}

export type Handler<K extends OperationId> = (ctx: HandlerContext<K>) => Promise<HandlerResult<K>>;
export type Handlers = { [K in OperationId]: Handler<K> };

/** A JSON-RPC 2.0 error (the `error` member of a response). */
export class RpcError extends Error {
  static readonly parseError = -32700;
  static readonly invalidRequest = -32600;
  static readonly methodNotFound = -32601;
  static readonly invalidParams = -32602;
  static readonly internalError = -32603;

  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

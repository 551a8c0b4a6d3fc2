/**
 * What both SDKs export from their shared core and receipts (one source, copied into the seller SDK by
 * scripts/generate.mjs; each SDK's index re-exports it whole): the contract types of the package's own bundle, the
 * one error type, transport and paging types, the local development fetch, and the offline checks of signed
 * documents (the facilitator's attestation, a seller's receipt, the earlier signed receipts).
 */
export type { paths, components, operations } from '../generated/openapi.js';
export { ApiError, type ApiErrorDetail } from './errors.js';
export type { RetryOptions } from './http.js';
export type { PageIterable } from './pagination.js';
export { localDevFetch, createLocalDevFetch, isLocalDevHost } from './local-dev-fetch.js';
export type { LedgerReader } from './soroban-rpc.js';
export {
  verifyReceiptSignature,
  type SignedReceiptPayload,
  type ReceiptVerification,
} from '../receipts/legacy-receipt.js';
export {
  verifyAttestation,
  attestationOf,
  attestationClaims,
  ATTESTATION_TYPE,
  type AttestationClaims,
  type AttestationPayload,
  type SignedDocumentCheck,
} from '../receipts/attestation.js';
export {
  verifySellerReceipt,
  sellerReceiptOf,
  type SellerReceiptPayload,
  type SellerReceiptExpectation,
} from '../receipts/seller-receipt.js';

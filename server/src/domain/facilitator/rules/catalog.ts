import type { Rule } from './rule';

/**
 * The rule list: the x402 `exact` Stellar scheme's "Facilitator Verification Rules (MUST)" (sections 1-5, in the
 * spec's order), then the accountability rules of this marketplace. server/README.md's "Payment guarantees" table is
 * this list; server/test/facilitator/exact-rules.test.ts refuses a payload for each rule (attacks.test.ts and
 * verify-errors.test.ts for the rules that need ledger state).
 */
const rule = (id: string, code: Rule['code'], x402Reason: string, requires: string): Rule => ({
  id,
  code,
  x402Reason,
  requires,
});

export const RULES = {
  // 1. Protocol validation
  x402Version: rule(
    'protocol.x402_version',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_x402_version',
    'x402Version MUST be 2',
  ),
  schemeExact: rule(
    'protocol.scheme_exact',
    'INVALID_PAYMENT_PAYLOAD',
    'unsupported_scheme',
    'payload and requirements scheme MUST be "exact"',
  ),
  networkSupported: rule(
    'protocol.network_supported',
    'UNSUPPORTED_NETWORK',
    'invalid_network',
    'the network MUST be one this facilitator serves',
  ),
  networkMatches: rule(
    'protocol.network_matches',
    'INVALID_PAYMENT_PAYLOAD',
    'network_mismatch',
    'payload network MUST match requirements.network',
  ),
  assetSupported: rule(
    'protocol.asset_supported',
    'UNSUPPORTED_ASSET',
    'invalid_exact_stellar_payload_wrong_asset',
    'requirements.asset MUST be a configured SEP-41 asset',
  ),
  paymentFlowSupported: rule(
    'protocol.payment_flow_supported',
    'INVALID_REQUEST',
    'unsupported_payment_flow',
    "requirements.extra.paymentFlow (and the payload's accepted one), when present, MUST be a flow this " +
      'facilitator settles for `exact` on Stellar: `authorization` or `upfront`; `escrow` and unknown flows are ' +
      'refused (escrow needs an escrow contract the scheme does not define)',
  ),
  // 2. Transaction structure
  decodable: rule(
    'structure.decodable',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_malformed',
    'the payload MUST be valid base64 XDR',
  ),
  plainTransaction: rule(
    'structure.plain_transaction',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_malformed',
    'the transaction MUST be a plain v1 transaction envelope',
  ),
  singleInvoke: rule(
    'structure.single_invoke_host_function',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_wrong_operation',
    'exactly 1 operation, of type invokeHostFunction',
  ),
  invokeContract: rule(
    'structure.invoke_contract',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_wrong_operation',
    'the function type MUST be hostFunctionTypeInvokeContract',
  ),
  contractIsAsset: rule(
    'structure.contract_is_required_asset',
    'ASSET_MISMATCH',
    'invalid_exact_stellar_payload_wrong_asset',
    'the contract address MUST match requirements.asset',
  ),
  transferCall: rule(
    'structure.transfer_three_arguments',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_wrong_function_name',
    'the function MUST be "transfer" with 3 arguments (Address, Address, i128)',
  ),
  recipient: rule(
    'structure.recipient_is_pay_to',
    'RECIPIENT_MISMATCH',
    'invalid_exact_stellar_payload_wrong_recipient',
    'argument 1 (to) MUST equal requirements.payTo',
  ),
  amount: rule(
    'structure.amount_is_required',
    'AMOUNT_MISMATCH',
    'invalid_exact_stellar_payload_wrong_amount',
    'argument 2 (amount) MUST equal requirements.amount',
  ),
  declaredTerms: rule(
    'structure.declared_terms_match',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_payload',
    "/v1 only: the payload's declared amount, payTo, asset, payer and expiresAtLedger MUST be the signed ones",
  ),
  // 3. Authorization entries
  addressCredentials: rule(
    'auth.address_credentials_only',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_unsupported_credentials',
    'auth entries MUST use address credentials, sorobanCredentialsAddress or its CAP-71 V2 ' +
      'sorobanCredentialsAddressV2; source-account credentials are refused',
  ),
  noDelegatedCredentials: rule(
    'auth.no_delegated_credentials',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_unsupported_credentials',
    'auth entries MUST NOT use CAP-71 delegated credentials (sorobanCredentialsAddressWithDelegates): the ' +
      "payment is the payer's own signed authorization, not its delegates'",
  ),
  signedByFrom: rule(
    'auth.entry_for_from',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_missing_payer_auth',
    'the transaction MUST carry the signed auth entry of the `from` address, authorizing exactly this call',
  ),
  noSubInvocations: rule(
    'auth.no_sub_invocations',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_sub_invocations',
    'the rootInvocation MUST NOT contain subInvocations',
  ),
  signatures: rule(
    'auth.signatures_verify',
    'INVALID_SIGNATURE',
    'invalid_exact_stellar_payload_missing_payer_signature',
    'all required signers MUST have signed (offline ed25519 pre-check; the simulation checks weights)',
  ),
  notExpired: rule(
    'auth.not_expired',
    'AUTH_EXPIRED',
    'invalid_exact_stellar_payload_signature_expired',
    'the auth entry MUST NOT have expired at the current ledger',
  ),
  expiryWindow: rule(
    'auth.expiry_within_window',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_expiration_too_far',
    'expiration MUST NOT exceed currentLedger + ceil(maxTimeoutSeconds / estimatedLedgerSeconds) (+2 ledgers ' +
      'of RPC skew)',
  ),
  // 4. Facilitator safety
  txSource: rule(
    'safety.tx_source_not_facilitator',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_unsafe_tx_or_op_source',
    'the transaction source MUST NOT be a facilitator address',
  ),
  opSource: rule(
    'safety.op_source_not_facilitator',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_unsafe_tx_or_op_source',
    'the operation source MUST NOT be a facilitator address',
  ),
  fromNotFacilitator: rule(
    'safety.from_not_facilitator',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_facilitator_is_payer',
    'the facilitator MUST NOT be the `from` address',
  ),
  facilitatorNotInAuth: rule(
    'safety.facilitator_not_in_auth',
    'INVALID_PAYMENT_PAYLOAD',
    'invalid_exact_stellar_payload_facilitator_in_auth',
    'the facilitator address MUST NOT appear in any auth entry',
  ),
  // 5. Simulation
  simulationSucceeds: rule(
    'simulation.succeeds',
    'SIMULATION_FAILED',
    'invalid_exact_stellar_payload_simulation_failed',
    're-simulated against current ledger state, the simulation MUST succeed',
  ),
  exactBalanceChanges: rule(
    'simulation.exact_balance_changes',
    'SIMULATION_FAILED',
    'invalid_exact_stellar_payload_unexpected_events',
    'events MUST show exactly payer -amount and payTo +amount, and no other balance change',
  ),
  // Accountability (this marketplace: nothing is sponsored that nobody accountable asked for)
  notSelfPayment: rule(
    'accountability.not_self_payment',
    'SELF_PAYMENT',
    'invalid_exact_stellar_payload_self_payment',
    'the payer MUST NOT be the payTo',
  ),
  minimumAmount: rule(
    'accountability.minimum_amount',
    'AMOUNT_BELOW_MINIMUM',
    'invalid_exact_stellar_payload_amount_below_minimum',
    'the amount MUST be at least FACILITATOR_MIN_AMOUNT',
  ),
  payeeIsSeller: rule(
    'accountability.payee_is_seller',
    'PAYEE_NOT_SELLER',
    'invalid_payment_requirements',
    "the payTo MUST be a signed-up seller's wallet (or the cataloged resource's payTo)",
  ),
  sellerAsked: rule(
    'accountability.uncataloged_needs_seller_key',
    'UNAUTHORIZED',
    'settle_exact_stellar_seller_key_required',
    'settling a payment for a URL that is not cataloged MUST carry the API key of the seller it pays (on ' +
      '/x402, verify too: whatever settle refuses, verify refuses)',
  ),
  sellerKeyMatches: rule(
    'accountability.seller_key_is_pay_to_seller',
    'FORBIDDEN',
    'settle_exact_stellar_seller_key_mismatch',
    'the API key settling a payment for a URL that is not cataloged MUST be the key of the seller the payTo belongs to',
  ),
  // Catalog terms on every entrance (issue #29): a payment naming a cataloged resource pays its current terms
  catalogNetwork: rule(
    'catalog.network_is_listed',
    'UNSUPPORTED_NETWORK',
    'network_mismatch',
    'a payment naming a cataloged resource MUST be on the network it is listed on',
  ),
  catalogAmount: rule(
    'catalog.amount_is_price',
    'AMOUNT_MISMATCH',
    'invalid_exact_stellar_payload_wrong_amount',
    "a payment naming a cataloged resource MUST pay the resource's current price",
  ),
  catalogPayTo: rule(
    'catalog.pay_to_is_listed',
    'RECIPIENT_MISMATCH',
    'invalid_exact_stellar_payload_wrong_recipient',
    'a payment naming a cataloged resource MUST pay the listed payTo (only the owner of another payTo may ' +
      'settle its own uncataloged payment for that URL, linked to nothing)',
  ),
  catalogAsset: rule(
    'catalog.asset_is_listed',
    'ASSET_MISMATCH',
    'invalid_exact_stellar_payload_wrong_asset',
    'a payment naming a cataloged resource MUST pay in its listed asset',
  ),
  feeBudget: rule(
    'accountability.fee_budget',
    'FEE_BUDGET_EXHAUSTED',
    'settle_exact_stellar_fee_budget_exhausted',
    "the daily fee budgets of the seller, the payer, the anonymous caller's address and the facilitator MUST " +
      "each cover the settlement's maximum fee",
  ),
  payerTurn: rule(
    'accountability.one_transfer_in_flight_per_payer',
    'SERVICE_UNAVAILABLE',
    'settle_exact_stellar_payer_busy',
    'a payer MUST NOT have two submitted transfers of one asset in flight (a settle waits for the one before ' +
      'it, then simulates again)',
  ),
} as const satisfies Record<string, Rule>;

export type RuleName = keyof typeof RULES;

/** The x402 reason of a rule id (from `details[0].code`), or null for an id that is not a rule. */
export function x402ReasonOfRule(id: string | undefined): string | null {
  if (!id) return null;
  for (const r of Object.values(RULES)) if (r.id === id) return r.x402Reason;
  return null;
}

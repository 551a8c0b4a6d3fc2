import type { RegisteredAsset } from '../network-registry';
import type { ValidationIssue } from './resource-rules';

/**
 * Seller readiness (issue #22): a listing whose `payTo` cannot receive its asset is a listing nobody can pay
 * (every buyer would get TRUSTLINE_REQUIRED). Validate and catalog look the wallet up on the ledger and warn;
 * the listing is still accepted (the seller may add the trustline next), and a ledger that cannot be asked adds
 * no warning (catalog never waits on, or fails because of, an RPC outage).
 */
export type WalletState = { account: boolean; trustline: boolean };

/** Reads an account and its trustline to an asset; null when the ledger cannot be asked now. */
export type WalletStateReader = (
  network: string,
  address: string,
  asset: RegisteredAsset,
) => Promise<WalletState | null>;

export function readinessWarnings(
  state: WalletState | null,
  facts: { network: string; payTo: string; asset: RegisteredAsset; fieldPrefix: string },
): ValidationIssue[] {
  if (!state || state.trustline) return [];
  const field = `${facts.fieldPrefix}payTo`;
  const asset = `${facts.asset.code} issued by ${facts.asset.issuer}`;
  if (!state.account) {
    return [
      {
        code: 'TRUSTLINE_REQUIRED',
        field,
        message:
          `the wallet ${facts.payTo} does not exist on ${facts.network}: fund it with XLM and add a trustline to ` +
          `${asset}, or every payment to this listing will be refused`,
      },
    ];
  }
  return [
    {
      code: 'TRUSTLINE_REQUIRED',
      field,
      message:
        `the wallet ${facts.payTo} has no trustline to ${asset} on ${facts.network}: nobody can pay this listing ` +
        `until the wallet adds one (a changeTrust operation)`,
    },
  ];
}

/** Only a G account that is not the asset's issuer holds a trustline (contracts and the issuer do not need one). */
export function needsTrustline(payTo: string, asset: RegisteredAsset): boolean {
  return payTo.startsWith('G') && payTo !== asset.issuer;
}

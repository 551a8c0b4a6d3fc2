import { Asset, Operation, xdr } from '@stellar/stellar-sdk';
import { assetIdOf } from './asset-registry';
import { TRUSTLINE_AUTHORIZED } from './balances';
import { LedgerView, entryKey, getAccount, getTrustline } from './ledger-state';
import { deleteOffer, offersInvolving } from './offers';
import { OperationContext, OperationOutcome, done, inner } from './operation-outcome';
import { AccountFlags } from './set-options';

/**
 * The issuer's control over its trustlines: setTrustLineFlags and the older allowTrust. Clearing AUTHORIZED
 * freezes a trustline (it can neither send nor receive: payments fail with paymentSrcNotAuthorized /
 * paymentNotAuthorized, SAC transfers with Error(Contract, #11)); reducing authorization needs the issuer's
 * AUTH_REVOCABLE flag; revoking it completely deletes the trustor's offers in the asset, as stellar-core does.
 */

export const MAINTAIN_LIABILITIES = 2;
const CLAWBACK_ENABLED = 4;

export type AuthorizationError = 'malformed' | 'noTrustLine' | 'cantRevoke' | 'invalidState';

/** Sets a trustline's flags to `next` as its issuer; undefined on success. */
export function changeTrustlineFlags(view: LedgerView, issuer: string, trustor: string, asset: Asset, setFlags: number, clearFlags: number, ledger: number): AuthorizationError | undefined {
  if (asset.isNative() || asset.getIssuer() !== issuer || trustor === issuer || setFlags & clearFlags || setFlags & CLAWBACK_ENABLED) return 'malformed';
  const assetId = assetIdOf(asset);
  const line = getTrustline(view, trustor, assetId);
  if (!line) return 'noTrustLine';
  const before = line.flags ?? TRUSTLINE_AUTHORIZED;
  const next = (before & ~clearFlags) | setFlags;
  if (next & TRUSTLINE_AUTHORIZED && next & MAINTAIN_LIABILITIES) return 'invalidState';
  const rank = (flags: number): number => (flags & TRUSTLINE_AUTHORIZED ? 2 : flags & MAINTAIN_LIABILITIES ? 1 : 0);
  const revocable = ((getAccount(view, issuer)?.flags ?? 0) & AccountFlags.authRevocable) !== 0;
  if (rank(next) < rank(before) && !revocable) return 'cantRevoke';
  if (rank(next) === 0 && rank(before) > 0) offersInvolving(view, trustor, assetId).forEach((offer) => deleteOffer(view, offer, ledger));
  const current = getTrustline(view, trustor, assetId)!;
  view.set(entryKey.trustline(trustor, assetId), { ...current, flags: next, lastModified: ledger });
  return undefined;
}

const flagBits = (flags: Operation.SetTrustLineFlags['flags']): { set: number; clear: number } => {
  let set = 0;
  let clear = 0;
  const apply = (value: boolean | undefined, bit: number) => {
    if (value === true) set |= bit;
    if (value === false) clear |= bit;
  };
  apply(flags.authorized, TRUSTLINE_AUTHORIZED);
  apply(flags.authorizedToMaintainLiabilities, MAINTAIN_LIABILITIES);
  apply(flags.clawbackEnabled, CLAWBACK_ENABLED);
  return { set, clear };
};

export function setTrustLineFlags(ctx: OperationContext, source: string, op: Operation.SetTrustLineFlags): OperationOutcome {
  const { set, clear } = flagBits(op.flags);
  const error = changeTrustlineFlags(ctx.view, source, op.trustor, op.asset, set, clear, ctx.ledgerSeq);
  const codes = { malformed: 'setTrustLineFlagsMalformed', noTrustLine: 'setTrustLineFlagsNoTrustLine', cantRevoke: 'setTrustLineFlagsCantRevoke', invalidState: 'setTrustLineFlagsInvalidState' } as const;
  const result = error ? xdr.SetTrustLineFlagsResult[codes[error]]() : xdr.SetTrustLineFlagsResult.setTrustLineFlagsSuccess();
  return done(inner(xdr.OperationResultTr.setTrustLineFlags(result)), !error);
}

export function allowTrust(ctx: OperationContext, source: string, op: Operation.AllowTrust): OperationOutcome {
  const level = op.authorize === true ? 1 : op.authorize === false ? 0 : Number(op.authorize);
  const set = level === 1 ? TRUSTLINE_AUTHORIZED : level === 2 ? MAINTAIN_LIABILITIES : 0;
  const clear = (TRUSTLINE_AUTHORIZED | MAINTAIN_LIABILITIES) & ~set;
  const error = op.trustor === source ? 'self' : changeTrustlineFlags(ctx.view, source, op.trustor, new Asset(op.assetCode, source), set, clear, ctx.ledgerSeq);
  const codes = { self: 'allowTrustSelfNotAllowed', malformed: 'allowTrustMalformed', noTrustLine: 'allowTrustNoTrustLine', cantRevoke: 'allowTrustCantRevoke', invalidState: 'allowTrustMalformed' } as const;
  const result = error ? xdr.AllowTrustResult[codes[error]]() : xdr.AllowTrustResult.allowTrustSuccess();
  return done(inner(xdr.OperationResultTr.allowTrust(result)), !error);
}

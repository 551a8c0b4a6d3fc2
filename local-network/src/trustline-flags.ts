import { Asset, Operation, xdr } from '@stellar/stellar-sdk';
import { assetIdOf } from './asset-registry';
import { TRUSTLINE_AUTHORIZED } from './balances';
import { LedgerView, entryKey, getAccount, getTrustline } from './ledger-state';
import { deleteOffer, offersInvolving } from './offers';
import { setAuthorizedEvent } from './contract-events';
import { OperationContext, OperationOutcome, done, inner } from './operation-outcome';
import { AccountFlags } from './set-options';

/**
 * The issuer's control over its trustlines: setTrustLineFlags and the older allowTrust. Clearing AUTHORIZED
 * freezes a trustline (it can neither send nor receive: payments fail with paymentSrcNotAuthorized /
 * paymentNotAuthorized, SAC transfers with Error(Contract, #11)); reducing authorization needs the issuer's
 * AUTH_REVOCABLE flag; revoking it completely deletes the trustor's offers in the asset, as stellar-core does.
 */

export const MAINTAIN_LIABILITIES = 2;
export const TRUSTLINE_CLAWBACK_ENABLED = 4;
const CLAWBACK_ENABLED = TRUSTLINE_CLAWBACK_ENABLED;

export type AuthorizationError = 'malformed' | 'noTrustLine' | 'cantRevoke' | 'invalidState';

/** Sets and clears a trustline's flags as its issuer; on success, whether AUTHORIZED changed (undefined: it did not).
 * */
export function changeTrustlineFlags(
  view: LedgerView,
  issuer: string,
  trustor: string,
  asset: Asset,
  setFlags: number,
  clearFlags: number,
  ledger: number,
): AuthorizationError | { authorizedNow?: boolean } {
  if (
    asset.isNative() ||
    asset.getIssuer() !== issuer ||
    trustor === issuer ||
    setFlags & clearFlags ||
    setFlags & CLAWBACK_ENABLED
  )
    return 'malformed';
  const assetId = assetIdOf(asset);
  const line = getTrustline(view, trustor, assetId);
  if (!line) return 'noTrustLine';
  const before = line.flags ?? TRUSTLINE_AUTHORIZED;
  const next = (before & ~clearFlags) | setFlags;
  if (next & TRUSTLINE_AUTHORIZED && next & MAINTAIN_LIABILITIES) return 'invalidState';
  const rank = (flags: number): number => (flags & TRUSTLINE_AUTHORIZED ? 2 : flags & MAINTAIN_LIABILITIES ? 1 : 0);
  const revocable = ((getAccount(view, issuer)?.flags ?? 0) & AccountFlags.authRevocable) !== 0;
  if (rank(next) < rank(before) && !revocable) return 'cantRevoke';
  if (rank(next) === 0 && rank(before) > 0)
    offersInvolving(view, trustor, assetId).forEach((offer) => deleteOffer(view, offer, ledger));
  const current = getTrustline(view, trustor, assetId)!;
  view.set(entryKey.trustline(trustor, assetId), { ...current, flags: next, lastModified: ledger });
  const changed = (before & TRUSTLINE_AUTHORIZED) !== (next & TRUSTLINE_AUTHORIZED);
  return { authorizedNow: changed ? (next & TRUSTLINE_AUTHORIZED) !== 0 : undefined };
}

/** The operation's outcome, with the CAP-67 set_authorized event when the authorization changed. */
function outcomeOf(
  ctx: OperationContext,
  result: xdr.OperationResult,
  change: AuthorizationError | { authorizedNow?: boolean },
  trustor: string,
  asset: Asset,
): OperationOutcome {
  if (typeof change === 'string') return done(result, false);
  if (change.authorizedNow === undefined) return done(result, true);
  const source = { contractId: asset.contractId(ctx.passphrase), assetId: assetIdOf(asset), issuer: asset.getIssuer() };
  return done(result, true, [setAuthorizedEvent(source, trustor, change.authorizedNow)]);
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

export function setTrustLineFlags(
  ctx: OperationContext,
  source: string,
  op: Operation.SetTrustLineFlags,
): OperationOutcome {
  const { set, clear } = flagBits(op.flags);
  const change = changeTrustlineFlags(ctx.view, source, op.trustor, op.asset, set, clear, ctx.ledgerSeq);
  const codes = {
    malformed: 'setTrustLineFlagsMalformed',
    noTrustLine: 'setTrustLineFlagsNoTrustLine',
    cantRevoke: 'setTrustLineFlagsCantRevoke',
    invalidState: 'setTrustLineFlagsInvalidState',
  } as const;
  const result =
    typeof change === 'string'
      ? xdr.SetTrustLineFlagsResult[codes[change]]()
      : xdr.SetTrustLineFlagsResult.setTrustLineFlagsSuccess();
  return outcomeOf(ctx, inner(xdr.OperationResultTr.setTrustLineFlags(result)), change, op.trustor, op.asset);
}

export function allowTrust(ctx: OperationContext, source: string, op: Operation.AllowTrust): OperationOutcome {
  const level = op.authorize === true ? 1 : op.authorize === false ? 0 : Number(op.authorize);
  const set = level === 1 ? TRUSTLINE_AUTHORIZED : level === 2 ? MAINTAIN_LIABILITIES : 0;
  const clear = (TRUSTLINE_AUTHORIZED | MAINTAIN_LIABILITIES) & ~set;
  const asset = new Asset(op.assetCode, source);
  const change =
    op.trustor === source
      ? 'self'
      : changeTrustlineFlags(ctx.view, source, op.trustor, asset, set, clear, ctx.ledgerSeq);
  const codes = {
    self: 'allowTrustSelfNotAllowed',
    malformed: 'allowTrustMalformed',
    noTrustLine: 'allowTrustNoTrustLine',
    cantRevoke: 'allowTrustCantRevoke',
    invalidState: 'allowTrustMalformed',
  } as const;
  const result =
    typeof change === 'string' ? xdr.AllowTrustResult[codes[change]]() : xdr.AllowTrustResult.allowTrustSuccess();
  return outcomeOf(
    ctx,
    inner(xdr.OperationResultTr.allowTrust(result)),
    change === 'self' ? 'malformed' : change,
    op.trustor,
    asset,
  );
}

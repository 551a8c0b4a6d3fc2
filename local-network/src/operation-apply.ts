import { Asset, Operation, hash, xdr } from '@stellar/stellar-sdk';
import { toStroops } from './amount';
import { assetIdOf } from './asset-registry';
import { AssetRef, TRUSTLINE_AUTHORIZED, availableNative, credit, debit } from './balances';
import { BASE_RESERVE, ACCOUNT_BASE_RESERVE_ENTRIES } from './constants';
import { AssetEventSource, paymentEvent, transferEvent } from './contract-events';
import { HostError } from './host-error';
import { invokeHost } from './host-invoke';
import { AccountRecord, entryKey, getAccount, getTrustline, liabilitiesOf } from './ledger-state';
import { operationSource } from './transaction-envelope';
import { operationCodeResult } from './transaction-results';
import { manageSellOffer } from './offers';
import { AccountFlags, setOptions } from './set-options';
import { TRUSTLINE_CLAWBACK_ENABLED, allowTrust, setTrustLineFlags } from './trustline-flags';
import { OperationContext, OperationOutcome, done, inner } from './operation-outcome';

export type { OperationContext, OperationOutcome } from './operation-outcome';

/**
 * Applies one operation at ledger close: createAccount, payment (XLM and issued assets, trustlines required),
 * changeTrust, and invokeHostFunction on a Stellar Asset Contract. Each returns a real OperationResult.
 */

function eventSource(asset: Asset, ctx: OperationContext): AssetEventSource & AssetRef {
  const registered = ctx.registry.find(assetIdOf(asset));
  if (registered) return registered;
  return {
    assetId: assetIdOf(asset),
    issuer: asset.isNative() ? '' : asset.getIssuer(),
    contractId: asset.contractId(ctx.passphrase),
  };
}

function createAccount(ctx: OperationContext, source: string, op: Operation.CreateAccount): OperationOutcome {
  const wrap = (r: xdr.CreateAccountResult, ok = false): OperationOutcome =>
    done(inner(xdr.OperationResultTr.createAccount(r)), ok);
  const amount = toStroops(op.startingBalance);
  if (amount <= 0n || op.destination === source) return wrap(xdr.CreateAccountResult.createAccountMalformed());
  if (getAccount(ctx.view, op.destination)) return wrap(xdr.CreateAccountResult.createAccountAlreadyExist());
  if (amount < ACCOUNT_BASE_RESERVE_ENTRIES * BASE_RESERVE)
    return wrap(xdr.CreateAccountResult.createAccountLowReserve());
  const native = eventSource(Asset.native(), ctx);
  if (debit(ctx.view, source, native, amount, ctx.ledgerSeq))
    return wrap(xdr.CreateAccountResult.createAccountUnderfunded());
  ctx.view.set(entryKey.account(op.destination), {
    kind: 'account',
    balance: amount,
    seqNum: BigInt(ctx.ledgerSeq) << 32n,
    numSubEntries: 0,
    lastModified: ctx.ledgerSeq,
  });
  const outcome = wrap(xdr.CreateAccountResult.createAccountSuccess(), true);
  outcome.events.push(transferEvent(native, source, op.destination, amount));
  return outcome;
}

function payment(ctx: OperationContext, source: string, op: Operation.Payment): OperationOutcome {
  const wrap = (r: xdr.PaymentResult, ok = false): OperationOutcome =>
    done(inner(xdr.OperationResultTr.payment(r)), ok);
  const amount = toStroops(op.amount);
  if (amount <= 0n) return wrap(xdr.PaymentResult.paymentMalformed());
  const asset = eventSource(op.asset, ctx);
  if (asset.issuer && !getAccount(ctx.view, asset.issuer)) return wrap(xdr.PaymentResult.paymentNoIssuer());
  if (!getAccount(ctx.view, op.destination)) return wrap(xdr.PaymentResult.paymentNoDestination());
  switch (debit(ctx.view, source, asset, amount, ctx.ledgerSeq)) {
    case 'noTrust':
      return wrap(xdr.PaymentResult.paymentSrcNoTrust());
    case 'notAuthorized':
      return wrap(xdr.PaymentResult.paymentSrcNotAuthorized());
    case 'underfunded':
    case 'noAccount':
      return wrap(xdr.PaymentResult.paymentUnderfunded());
    default:
  }
  switch (credit(ctx.view, op.destination, asset, amount, ctx.ledgerSeq)) {
    case 'noTrust':
      return wrap(xdr.PaymentResult.paymentNoTrust());
    case 'notAuthorized':
      return wrap(xdr.PaymentResult.paymentNotAuthorized());
    case 'lineFull':
      return wrap(xdr.PaymentResult.paymentLineFull());
    case 'noAccount':
      return wrap(xdr.PaymentResult.paymentNoDestination());
    default:
  }
  const outcome = wrap(xdr.PaymentResult.paymentSuccess(), true);
  outcome.events.push(paymentEvent(asset, source, op.destination, amount));
  return outcome;
}

/**
 * A new trustline starts authorized unless its issuer has AUTH_REQUIRED (then the issuer must authorize it), and
 * clawback-enabled when its issuer has AUTH_CLAWBACK_ENABLED, as stellar-core sets them.
 */
export function newTrustlineFlags(issuer: AccountRecord | undefined): number {
  const flags = issuer?.flags ?? 0;
  return (
    (flags & AccountFlags.authRequired ? 0 : TRUSTLINE_AUTHORIZED) |
    (flags & AccountFlags.authClawbackEnabled ? TRUSTLINE_CLAWBACK_ENABLED : 0)
  );
}

function changeTrust(ctx: OperationContext, source: string, op: Operation.ChangeTrust): OperationOutcome {
  const wrap = (r: xdr.ChangeTrustResult, ok = false): OperationOutcome =>
    done(inner(xdr.OperationResultTr.changeTrust(r)), ok);
  const line = op.line;
  if (!(line instanceof Asset) || line.isNative() || line.getIssuer() === source)
    return wrap(xdr.ChangeTrustResult.changeTrustMalformed());
  const limit = toStroops(op.limit);
  const assetId = assetIdOf(line);
  const account = getAccount(ctx.view, source);
  if (!account) return wrap(xdr.ChangeTrustResult.changeTrustMalformed());
  const existing = getTrustline(ctx.view, source, assetId);
  const key = entryKey.trustline(source, assetId);
  const liabilities = existing ? liabilitiesOf(existing) : { buying: 0n, selling: 0n };
  if (limit === 0n) {
    if (!existing || existing.balance > 0n) return wrap(xdr.ChangeTrustResult.changeTrustInvalidLimit());
    if (liabilities.buying > 0n || liabilities.selling > 0n)
      return wrap(xdr.ChangeTrustResult.changeTrustCannotDelete());
    ctx.view.delete(key);
    ctx.view.set(entryKey.account(source), {
      ...account,
      numSubEntries: account.numSubEntries - 1,
      lastModified: ctx.ledgerSeq,
    });
    return wrap(xdr.ChangeTrustResult.changeTrustSuccess(), true);
  }
  if (existing) {
    if (limit < existing.balance + liabilities.buying) return wrap(xdr.ChangeTrustResult.changeTrustInvalidLimit());
    ctx.view.set(key, { ...existing, limit, lastModified: ctx.ledgerSeq });
    return wrap(xdr.ChangeTrustResult.changeTrustSuccess(), true);
  }
  if (!getAccount(ctx.view, line.getIssuer())) return wrap(xdr.ChangeTrustResult.changeTrustNoIssuer());
  if (availableNative(account) < BASE_RESERVE) return wrap(xdr.ChangeTrustResult.changeTrustLowReserve());
  ctx.view.set(key, {
    kind: 'trustline',
    balance: 0n,
    limit,
    flags: newTrustlineFlags(getAccount(ctx.view, line.getIssuer())),
    lastModified: ctx.ledgerSeq,
  });
  ctx.view.set(entryKey.account(source), {
    ...account,
    numSubEntries: account.numSubEntries + 1,
    lastModified: ctx.ledgerSeq,
  });
  return wrap(xdr.ChangeTrustResult.changeTrustSuccess(), true);
}

function invokeHostFunction(ctx: OperationContext, source: string, op: Operation.InvokeHostFunction): OperationOutcome {
  const wrap = (r: xdr.InvokeHostFunctionResult, ok = false): OperationOutcome =>
    done(inner(xdr.OperationResultTr.invokeHostFunction(r)), ok);
  const declared = ctx.tx.sorobanData?.resources();
  if (!declared) return wrap(xdr.InvokeHostFunctionResult.invokeHostFunctionMalformed());
  try {
    const run = invokeHost({
      view: ctx.view,
      registry: ctx.registry,
      networkId: ctx.networkId,
      currentLedger: ctx.ledgerSeq,
      invoker: source,
      mode: 'enforce',
      hostFunction: op.func,
      authEntries: op.auth ?? [],
    });
    const violation = run.footprint.violationOf(declared.footprint());
    if (violation) return { ...wrap(xdr.InvokeHostFunctionResult.invokeHostFunctionTrapped()), error: violation };
    const used = run.resources;
    if (
      used.instructions() > declared.instructions() ||
      used.writeBytes() > declared.writeBytes() ||
      used.diskReadBytes() > declared.diskReadBytes()
    ) {
      return {
        ...wrap(xdr.InvokeHostFunctionResult.invokeHostFunctionResourceLimitExceeded()),
        error: 'declared Soroban resources are too low',
      };
    }
    const preimage = new xdr.InvokeHostFunctionSuccessPreImage({ returnValue: run.returnValue, events: run.events });
    return {
      result: inner(
        xdr.OperationResultTr.invokeHostFunction(
          xdr.InvokeHostFunctionResult.invokeHostFunctionSuccess(hash(preimage.toXDR())),
        ),
      ),
      success: true,
      events: run.events,
      returnValue: run.returnValue,
    };
  } catch (error) {
    if (!(error instanceof HostError)) throw error;
    return { ...wrap(xdr.InvokeHostFunctionResult.invokeHostFunctionTrapped()), error: error.message };
  }
}

export function applyOperation(ctx: OperationContext, op: Operation, index: number): OperationOutcome {
  const source = operationSource(ctx.tx, op);
  if (!getAccount(ctx.view, source)) return done(operationCodeResult('opNoAccount'), false);
  switch (op.type) {
    case 'createAccount':
      return createAccount(ctx, source, op);
    case 'payment':
      return payment(ctx, source, op);
    case 'changeTrust':
      return changeTrust(ctx, source, op);
    case 'invokeHostFunction':
      return invokeHostFunction(ctx, source, op);
    case 'setOptions':
      return setOptions(ctx, source, op);
    case 'setTrustLineFlags':
      return setTrustLineFlags(ctx, source, op);
    case 'allowTrust':
      return allowTrust(ctx, source, op);
    case 'manageSellOffer':
      return manageSellOffer(
        ctx,
        source,
        op,
        ctx.tx.inner.toEnvelope().v1().tx().operations()[index].body().manageSellOfferOp().price(),
      );
    default:
      return done(operationCodeResult('opNotSupported'), false);
  }
}

import { Address, StrKey, nativeToScVal, scValToNative, xdr } from '@stellar/stellar-sdk';
import { RegisteredAsset } from './asset-registry';
import { AuthContext, requireAuth } from './auth-verify';
import { BalanceError, balanceOf, credit, debit } from './balances';
import { ASSET_DECIMALS, MAX_INT64 } from './constants';
import { paymentEvent } from './contract-events';
import { FootprintRecorder } from './footprint';
import { HostError, SacError } from './host-error';
import { balanceLedgerKey, ledgerKeys } from './ledger-entries';

/**
 * The Stellar Asset Contract functions the simulator executes: transfer (with require_auth on `from`; its event
 * is `transfer`, or `mint`/`burn` when the issuer sends/receives, per CAP-67), balance,
 * decimals, name and symbol. Balances of G accounts live in their account (XLM) or trustline (issued assets);
 * balances of contract addresses live in the SAC's own `Balance` entries.
 */

export interface SacCallContext {
  asset: RegisteredAsset;
  call: xdr.InvokeContractArgs;
  auth: AuthContext;
  footprint: FootprintRecorder;
  currentLedger: number;
  events: xdr.ContractEvent[];
}

/** Instruction counts charged per function, in the ballpark of the real SAC. */
export const SAC_INSTRUCTIONS: Record<string, number> = {
  transfer: 1_400_000,
  balance: 600_000,
  decimals: 300_000,
  name: 300_000,
  symbol: 300_000,
};

function addressArg(arg: xdr.ScVal | undefined, name: string): string {
  if (!arg || arg.switch().name !== 'scvAddress')
    throw new HostError('Value', 'UnexpectedType', `argument "${name}" must be an address`);
  return Address.fromScVal(arg).toString();
}

function i128Arg(arg: xdr.ScVal | undefined, name: string): bigint {
  if (!arg || arg.switch().name !== 'scvI128')
    throw new HostError('Value', 'UnexpectedType', `argument "${name}" must be an i128`);
  return scValToNative(arg) as bigint;
}

function balanceFailure(error: BalanceError, holder: string, asset: RegisteredAsset): HostError {
  switch (error) {
    case 'noAccount':
      return new HostError('Contract', SacError.AccountMissing, `account ${holder} does not exist`);
    case 'noTrust':
      return new HostError(
        'Contract',
        SacError.TrustlineMissing,
        `trustline entry is missing for account ${holder} (asset ${asset.assetId})`,
      );
    case 'underfunded':
      return new HostError(
        'Contract',
        SacError.Balance,
        `balance of ${holder} is not sufficient to spend (asset ${asset.assetId}; selling liabilities of offers ` +
          `are not spendable)`,
      );
    case 'lineFull':
      return new HostError(
        'Contract',
        SacError.Balance,
        `balance of ${holder} would exceed its trustline limit (asset ${asset.assetId})`,
      );
    case 'notAuthorized':
      return new HostError(
        'Contract',
        SacError.BalanceDeauthorized,
        `trustline of ${holder} is not authorized by the issuer (asset ${asset.assetId})`,
      );
  }
}

function touchBalance(ctx: SacCallContext, holder: string, write: boolean): void {
  const key = balanceLedgerKey(holder, ctx.asset);
  if (!key) return;
  if (write) ctx.footprint.write(key);
  else ctx.footprint.read(key);
}

function transfer(ctx: SacCallContext, args: xdr.ScVal[]): xdr.ScVal {
  if (args.length !== 3) throw new HostError('Value', 'UnexpectedSize', 'transfer(from, to, amount) takes 3 arguments');
  const from = addressArg(args[0], 'from');
  const to = addressArg(args[1], 'to');
  const amount = i128Arg(args[2], 'amount');
  if (amount < 0n)
    throw new HostError('Contract', SacError.NegativeAmount, `negative amount is not allowed: ${amount}`);
  requireAuth(ctx.auth, from, ctx.call);
  if (!ctx.asset.asset.isNative()) ctx.footprint.read(ledgerKeys.account(ctx.asset.issuer));
  touchBalance(ctx, from, true);
  touchBalance(ctx, to, true);
  const view = ctx.auth.view;
  const debitError = debit(view, from, ctx.asset, amount, ctx.currentLedger);
  if (debitError) throw balanceFailure(debitError, from, ctx.asset);
  const creditError = credit(view, to, ctx.asset, amount, ctx.currentLedger);
  if (creditError) throw balanceFailure(creditError, to, ctx.asset);
  ctx.events.push(paymentEvent(ctx.asset, from, to, amount));
  return xdr.ScVal.scvVoid();
}

function balance(ctx: SacCallContext, args: xdr.ScVal[]): xdr.ScVal {
  if (args.length !== 1) throw new HostError('Value', 'UnexpectedSize', 'balance(id) takes 1 argument');
  const holder = addressArg(args[0], 'id');
  touchBalance(ctx, holder, false);
  if (StrKey.isValidEd25519PublicKey(holder) && !ctx.asset.asset.isNative() && holder !== ctx.asset.issuer) {
    ctx.footprint.read(ledgerKeys.account(holder));
  }
  return nativeToScVal(balanceOf(ctx.auth.view, holder, ctx.asset) ?? MAX_INT64, { type: 'i128' });
}

/** Runs one SAC function; throws HostError on failure. */
export function callStellarAssetContract(ctx: SacCallContext): xdr.ScVal {
  const fn = ctx.call.functionName().toString();
  const args = ctx.call.args();
  switch (fn) {
    case 'transfer':
      return transfer(ctx, args);
    case 'balance':
      return balance(ctx, args);
    case 'decimals':
      return xdr.ScVal.scvU32(ASSET_DECIMALS);
    case 'name':
      return xdr.ScVal.scvString(ctx.asset.asset.isNative() ? 'native' : ctx.asset.assetId);
    case 'symbol':
      return xdr.ScVal.scvString(ctx.asset.asset.isNative() ? 'native' : ctx.asset.code);
    default:
      throw new HostError(
        'Contract',
        SacError.OperationNotSupported,
        `function "${fn}" of the Stellar Asset Contract is not supported by the local simulation`,
      );
  }
}

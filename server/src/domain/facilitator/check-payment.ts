import type { xdr } from '@stellar/stellar-sdk';
import type { Stroops } from '../amount';
import { DomainError } from '../errors';
import { MAX_TIMEOUT_CAP_SECONDS, MAX_TIMEOUT_SECONDS } from '../defaults';
import { RULES } from './rules/catalog';
import { checkOffline, type CheckedPayment, type RequiredTerms } from './rules/offline';
import type { DecodedPayment } from './rules/decode';
import { ensure } from './rules/rule';
import {
  checkExactBalanceChanges,
  checkExpiry,
  checkSimulationSucceeded,
  type SimulationOutcome,
} from './rules/simulation';
import type { AssetRef, LedgerPort } from './types';
import type { AssetContractId } from '../network-registry';

/**
 * The x402 `exact` Stellar verification, shared by verify and settle (settle runs it again, independently, on what it
 * is given): the offline rules first, then one simulateTransaction as the authority, then the rules judged on it.
 */

/**
 * An asset as a face names it, resolved against the configured networks at its edge (`resolveAsset`): its contract
 * id when it is a registered asset of the network, else null (refused by asset_supported, named by its code).
 */
export interface AssetInput {
  code: string;
  issuer: string;
  contractId: AssetContractId | null;
}

/** The asset (code, issuer) of `network` as the domain takes it: with its contract id when it is registered. */
export function resolveAsset(networks: Pick<NetworkLookup, 'asset'>, network: string, code: string, issuer: string) {
  const registered = networks.asset(network, code, issuer);
  return { code, issuer, contractId: registered?.contractId ?? null } satisfies AssetInput;
}

/** The registered asset an input names, or undefined when it is not registered. */
function registeredAsset(asset: AssetInput): AssetRef | undefined {
  return asset.contractId === null
    ? undefined
    : { code: asset.code, issuer: asset.issuer, contractId: asset.contractId };
}

export interface PaymentPayloadInput {
  /** x402 face only: the payload's x402Version. */
  x402Version?: number;
  scheme: string;
  network: string;
  asset: AssetInput;
  /** What the payload declares, converted once by its face; null: it is not an amount (it then differs from the
   * signed one, and the declared-terms rule refuses it). */
  amount: Stroops | null;
  payTo: string;
  /** /v1: the expiry the payload declares beside its signed entry (x402 declares none: the signed one is read). */
  expiresAtLedger?: number;
  authorization: { format: string; xdr: string; payer?: string };
  /** The authorization already decoded by the face (x402: it read the payer from it): the rules do not decode again. */
  decoded?: DecodedPayment;
}

export interface PaymentRequirementsInput {
  scheme: string;
  network: string;
  /** The required amount, converted once by its face (/v1: a decimal amount; /x402: atomic units). */
  amount: Stroops;
  payTo: string;
  asset?: AssetInput;
  resource?: string;
  maxTimeoutSeconds?: number;
}

export interface NetworkLookup {
  get(network: string): { network: string; passphrase: string; assets: AssetRef[] } | undefined;
  asset(network: string, code: string, issuer: string): AssetRef | undefined;
}

/** The facilitator's policy inputs: its own addresses, the minimum amount, the ledger pace. */
export interface FacilitatorPolicy {
  /** Channel accounts (and the fee account) of the network. */
  facilitatorAddresses(network: string): ReadonlySet<string>;
  /** FACILITATOR_MIN_AMOUNT. */
  minimumStroops: Stroops;
  /** The network's estimated seconds per ledger (the spec's estimatedLedgerSeconds). */
  ledgerSeconds(network: string): number;
}

export interface CheckDeps {
  ledger: Pick<LedgerPort, 'simulate'>;
  networks: NetworkLookup;
  policy: FacilitatorPolicy;
}

/**
 * The base64 XDR of each authorization entry the offline rules checked (they encode it once, CheckedPayment.entryXdr),
 * so the shared-simulation key below reads it instead of encoding the entry again on every verify (issue #31).
 */
const CHECKED_ENTRY_XDR = new WeakMap<object, string>();

/** Remembers a checked entry's base64 XDR (checkPayment does, after the offline rules). */
export function rememberCheckedEntry(entry: xdr.SorobanAuthorizationEntry, entryXdr: string): void {
  CHECKED_ENTRY_XDR.set(entry, entryXdr);
}

/** The base64 XDR of an authorization entry: the checked one's, else encoded now. */
export function authEntryXdr(entry: xdr.SorobanAuthorizationEntry): string {
  return CHECKED_ENTRY_XDR.get(entry) ?? entry.toXDR('base64');
}

/**
 * The ledger port with concurrent simulations of one authorization from one source sharing one RPC call: a storm of
 * duplicates of one payment in a process costs one simulation (the answer is the same for all of them).
 */
export function withSharedSimulations(ledger: LedgerPort): LedgerPort {
  const inflight = new Map<string, Promise<SimulationOutcome>>();
  return {
    latestLedger: (n) => ledger.latestLedger(n),
    prepareSettlement: (n, lease, entry) => ledger.prepareSettlement(n, lease, entry),
    submit: (n, envelope) => ledger.submit(n, envelope),
    accountSequence: (n, address) => ledger.accountSequence(n, address),
    transaction: (n, hash) => ledger.transaction(n, hash),
    simulate(network, hostFunction, auth, source) {
      const key = `${network}|${source}|${auth.map(authEntryXdr).join(',')}`;
      let p = inflight.get(key);
      if (!p) {
        p = ledger.simulate(network, hostFunction, auth, source).finally(() => inflight.delete(key));
        inflight.set(key, p);
      }
      return p;
    },
  };
}

/** The requirements resolved against the configured networks (rules protocol.network_supported / asset_supported). */
export function resolveRequired(networks: NetworkLookup, req: PaymentRequirementsInput): RequiredTerms {
  const net = networks.get(req.network);
  ensure(RULES.networkSupported, net !== undefined, `Network ${req.network} is not supported`);
  const asset = req.asset ? registeredAsset(req.asset) : (net!.assets.find((a) => a.code === 'USDC') ?? net!.assets[0]);
  ensure(
    RULES.assetSupported,
    asset !== undefined,
    `Asset ${req.asset?.code ?? '(default)'} is not supported on ${req.network}`,
  );
  if (req.amount <= 0n)
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The required amount must be a positive decimal amount');
  return {
    scheme: req.scheme,
    network: req.network,
    passphrase: net!.passphrase,
    amount: req.amount,
    payTo: req.payTo,
    asset: asset!,
  };
}

/** The offline rules on a payload against resolved requirements. */
export function checkPaymentOffline(
  deps: Pick<CheckDeps, 'networks' | 'policy'>,
  payload: PaymentPayloadInput,
  required: RequiredTerms,
): CheckedPayment {
  const declaredAsset = registeredAsset(payload.asset);
  if (payload.network === required.network)
    ensure(
      RULES.assetSupported,
      declaredAsset !== undefined,
      `Asset ${payload.asset.code} is not supported on ${payload.network}`,
    );
  return checkOffline(
    {
      x402Version: payload.x402Version,
      scheme: payload.scheme,
      network: payload.network,
      required,
      declared: {
        amount: payload.amount,
        payTo: payload.payTo,
        assetContractId: declaredAsset?.contractId ?? 'unsupported',
        expiresAtLedger: payload.expiresAtLedger,
        payer: payload.authorization.payer,
      },
      authorization: payload.authorization,
      decoded: payload.decoded,
    },
    {
      facilitatorAddresses: deps.policy.facilitatorAddresses(required.network),
      minimumStroops: deps.policy.minimumStroops,
    },
  );
}

/** The source a verify simulates from: a facilitator account (what settle would submit from), else the client's. */
export function simulationSource(deps: Pick<CheckDeps, 'policy'>, network: string, checked: CheckedPayment): string {
  const ours = [...deps.policy.facilitatorAddresses(network)];
  const source = ours[0] ?? checked.decoded.txSource ?? (checked.payer.startsWith('G') ? checked.payer : null);
  if (!source) throw new DomainError('SERVICE_UNAVAILABLE', `No account to simulate from on ${network}`);
  return source;
}

/** The rules judged on a simulation: expiry window (against its latest ledger), success, exact balance changes. */
export function checkSimulated(
  deps: Pick<CheckDeps, 'policy'>,
  checked: CheckedPayment,
  required: RequiredTerms,
  sim: SimulationOutcome,
  maxTimeoutSeconds: number,
): void {
  checkExpiry(
    checked.signatureExpirationLedger,
    sim.latestLedger,
    maxTimeoutSeconds,
    deps.policy.ledgerSeconds(required.network),
  );
  checkSimulationSucceeded(sim, { payer: checked.payer, payTo: required.payTo, assetCode: required.asset.code });
  checkExactBalanceChanges(sim, {
    payer: checked.payer,
    payTo: required.payTo,
    amount: required.amount,
    contractId: required.asset.contractId,
  });
}

/**
 * The expiry window's maxTimeoutSeconds: the requirements' (MAX_TIMEOUT_SECONDS, what the catalog announces, when
 * they carry none), never over MAX_TIMEOUT_CAP_SECONDS, and for a cataloged resource never over what it announces.
 */
export function effectiveMaxTimeout(req: PaymentRequirementsInput, resourceKnown: boolean): number {
  const limit = Math.min(req.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS, MAX_TIMEOUT_CAP_SECONDS);
  return resourceKnown ? Math.min(limit, MAX_TIMEOUT_SECONDS) : limit;
}

/** A payment that passed every check: the resolved terms, the offline rules' result, and the simulation. */
export interface PaymentCheck {
  required: RequiredTerms;
  checked: CheckedPayment;
  simulation: SimulationOutcome;
}

/** What verify and settle each do between the shared steps of checkPayment. */
export interface CheckSteps {
  /**
   * Between the offline rules and the simulation (settle: a payment already claimed is refused here, with no ledger
   * call). Returning false ends the check there: the caller has its answer (checkPayment answers null).
   */
  beforeSimulation?(checked: CheckedPayment, required: RequiredTerms): Promise<boolean | void>;
  /**
   * Between the simulation and its rules: whatever must be said first (a replay, the catalog's refusals); answers
   * whether the payment is for a cataloged resource (its announced maxTimeoutSeconds then caps the expiry window).
   */
  afterSimulation(checked: CheckedPayment, required: RequiredTerms, simulation: SimulationOutcome): Promise<boolean>;
  /** A refusal by the simulation's rules, before it is thrown (settle: an expired authorization ends its attempt). */
  refused?(err: unknown): Promise<void>;
}

/**
 * The x402 `exact` Stellar check, one sequence for verify and settle (settle runs it again, independently, on what it
 * is given): the numbered steps below, with each caller's own steps between them.
 */
export async function checkPayment(
  deps: CheckDeps,
  payload: PaymentPayloadInput,
  req: PaymentRequirementsInput,
  steps: CheckSteps,
): Promise<PaymentCheck | null> {
  // 1. The requirements resolved against the configured networks (network, asset, a positive amount).
  const required = resolveRequired(deps.networks, req);
  // 2. The offline rules (rules/offline.ts): no ledger, no database, hostile traffic turned away cheaply.
  const checked = checkPaymentOffline(deps, payload, required);
  rememberCheckedEntry(checked.entry, checked.entryXdr);
  // 3. The caller's step before the ledger is asked.
  if ((await steps.beforeSimulation?.(checked, required)) === false) return null;
  // 4. One simulation, from the account settle would submit from: the ledger is the authority.
  const source = simulationSource(deps, required.network, checked);
  const simulation = await deps.ledger.simulate(required.network, checked.hostFunction, [checked.entry], source);
  // 5. The caller's step before the simulation is judged.
  const resourceKnown = await steps.afterSimulation(checked, required, simulation);
  // 6. The rules judged on the simulation: expiry window, success, exact balance changes.
  try {
    checkSimulated(deps, checked, required, simulation, effectiveMaxTimeout(req, resourceKnown));
  } catch (err) {
    await steps.refused?.(err);
    throw err;
  }
  return { required, checked, simulation };
}

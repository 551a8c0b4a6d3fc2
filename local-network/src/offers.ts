import { Asset, Operation, xdr } from '@stellar/stellar-sdk';
import { toStroops } from './amount';
import { assetIdOf } from './asset-registry';
import { availableNative, availableOnLine, isAuthorized, roomOnLine } from './balances';
import { BASE_RESERVE, MAX_INT64 } from './constants';
import {
  Liabilities,
  LedgerView,
  OfferRecord,
  entryKey,
  getAccount,
  getOffer,
  getTrustline,
  liabilitiesOf,
} from './ledger-state';
import { offerEntry } from './ledger-entries';
import { OperationContext, OperationOutcome, done, inner } from './operation-outcome';

/**
 * manageSellOffer without a matching engine: offers rest on the book and never cross. What the local network
 * models is their effect on balances, as stellar-core does: an offer adds selling liabilities (its amount) to the
 * seller's selling balance and buying liabilities (amount x price, rounded up) to the buying balance, and payments
 * and SAC transfers cannot spend below balance - selling liabilities (nor receive above limit - buying
 * liabilities). Updating an offer re-computes them; amount 0 deletes the offer and frees them.
 */

type SellOfferCode =
  | 'manageSellOfferMalformed'
  | 'manageSellOfferSellNoTrust'
  | 'manageSellOfferBuyNoTrust'
  | 'manageSellOfferSellNotAuthorized'
  | 'manageSellOfferBuyNotAuthorized'
  | 'manageSellOfferLineFull'
  | 'manageSellOfferUnderfunded'
  | 'manageSellOfferSellNoIssuer'
  | 'manageSellOfferBuyNoIssuer'
  | 'manageSellOfferNotFound'
  | 'manageSellOfferLowReserve';

const fail = (code: SellOfferCode): OperationOutcome =>
  done(inner(xdr.OperationResultTr.manageSellOffer(xdr.ManageSellOfferResult[code]())), false);

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

export function offerLiabilities(offer: Pick<OfferRecord, 'amount' | 'priceN' | 'priceD'>): Liabilities {
  return { selling: offer.amount, buying: ceilDiv(offer.amount * BigInt(offer.priceN), BigInt(offer.priceD)) };
}

const isIssuerOf = (account: string, assetId: string): boolean =>
  assetId !== 'native' && assetId.endsWith(`:${account}`);

/** Adds `delta` (may be negative) to the liabilities `account` has in `assetId`; the issuer keeps none. */
function addLiabilities(view: LedgerView, account: string, assetId: string, delta: Liabilities, ledger: number): void {
  if (isIssuerOf(account, assetId)) return;
  const record = assetId === 'native' ? getAccount(view, account) : getTrustline(view, account, assetId);
  if (!record) return;
  const now = liabilitiesOf(record);
  const liabilities = { buying: now.buying + delta.buying, selling: now.selling + delta.selling };
  const key = assetId === 'native' ? entryKey.account(account) : entryKey.trustline(account, assetId);
  view.set(key, { ...record, liabilities, lastModified: ledger });
}

/** Adds (sign 1) or removes (sign -1) an offer's liabilities on both sides. */
export function applyOfferLiabilities(view: LedgerView, offer: OfferRecord, sign: 1n | -1n, ledger: number): void {
  const l = offerLiabilities(offer);
  addLiabilities(view, offer.seller, offer.selling, { buying: 0n, selling: sign * l.selling }, ledger);
  addLiabilities(view, offer.seller, offer.buying, { buying: sign * l.buying, selling: 0n }, ledger);
}

/** Deletes an offer, freeing its liabilities and its sub-entry. */
export function deleteOffer(view: LedgerView, offer: OfferRecord, ledger: number): void {
  applyOfferLiabilities(view, offer, -1n, ledger);
  removeOfferEntry(view, offer, ledger);
}

function removeOfferEntry(view: LedgerView, offer: OfferRecord, ledger: number): void {
  view.delete(entryKey.offer(offer.seller, offer.offerId));
  const account = getAccount(view, offer.seller);
  if (account)
    view.set(entryKey.account(offer.seller), {
      ...account,
      numSubEntries: account.numSubEntries - 1,
      lastModified: ledger,
    });
}

/** Every offer of `account` selling or buying `assetId` (for a trustline whose authorization is revoked). */
export function offersInvolving(view: LedgerView, account: string, assetId: string): OfferRecord[] {
  return view
    .keysWithPrefix(`offer:${account}:`)
    .map((k) => view.get(k))
    .filter((r): r is OfferRecord => r?.kind === 'offer' && (r.selling === assetId || r.buying === assetId));
}

/** Trust checks of one side of an offer; undefined when fine. */
function checkSide(view: LedgerView, source: string, asset: Asset, side: 'Sell' | 'Buy'): SellOfferCode | undefined {
  if (asset.isNative() || asset.getIssuer() === source) return undefined;
  if (!getAccount(view, asset.getIssuer())) return `manageSellOffer${side}NoIssuer`;
  const line = getTrustline(view, source, assetIdOf(asset));
  if (!line) return `manageSellOffer${side}NoTrust`;
  return isAuthorized(line) ? undefined : `manageSellOffer${side}NotAuthorized`;
}

/** How much of `assetId` the seller can still offer, and how much more it can take in. */
function capacity(view: LedgerView, source: string, selling: string, buying: string): { sell: bigint; buy: bigint } {
  const account = getAccount(view, source)!;
  const sellLine = selling === 'native' ? undefined : getTrustline(view, source, selling);
  const buyLine = buying === 'native' ? undefined : getTrustline(view, source, buying);
  const sell = isIssuerOf(source, selling)
    ? MAX_INT64
    : selling === 'native'
      ? availableNative(account)
      : availableOnLine(sellLine!);
  const buy = isIssuerOf(source, buying)
    ? MAX_INT64
    : buying === 'native'
      ? MAX_INT64 - account.balance - liabilitiesOf(account).buying
      : roomOnLine(buyLine!);
  return { sell, buy };
}

function success(offer: xdr.ManageOfferSuccessResultOffer): OperationOutcome {
  const result = new xdr.ManageOfferSuccessResult({ offersClaimed: [], offer });
  return done(
    inner(xdr.OperationResultTr.manageSellOffer(xdr.ManageSellOfferResult.manageSellOfferSuccess(result))),
    true,
  );
}

function nextOfferId(view: LedgerView): bigint {
  const last = view.get(entryKey.lastOfferId);
  const value = (last?.kind === 'counter' ? last.value : 0n) + 1n;
  view.set(entryKey.lastOfferId, { kind: 'counter', value });
  return value;
}

export function manageSellOffer(
  ctx: OperationContext,
  source: string,
  op: Operation.ManageSellOffer,
  price: xdr.Price,
): OperationOutcome {
  const amount = toStroops(op.amount);
  const offerId = BigInt(op.offerId ?? '0');
  const [selling, buying] = [assetIdOf(op.selling), assetIdOf(op.buying)];
  if (selling === buying || price.n() <= 0 || price.d() <= 0 || amount < 0n || (offerId === 0n && amount === 0n))
    return fail('manageSellOfferMalformed');
  const existing = offerId === 0n ? undefined : getOffer(ctx.view, source, offerId);
  if (offerId !== 0n && !existing) return fail('manageSellOfferNotFound');
  if (existing) applyOfferLiabilities(ctx.view, existing, -1n, ctx.ledgerSeq);
  if (existing && amount === 0n) {
    removeOfferEntry(ctx.view, existing, ctx.ledgerSeq);
    return success(xdr.ManageOfferSuccessResultOffer.manageOfferDeleted());
  }
  const sideError = checkSide(ctx.view, source, op.selling, 'Sell') ?? checkSide(ctx.view, source, op.buying, 'Buy');
  if (sideError) return fail(sideError);
  const account = getAccount(ctx.view, source)!;
  if (!existing) {
    if (availableNative(account) < BASE_RESERVE) return fail('manageSellOfferLowReserve');
    ctx.view.set(entryKey.account(source), {
      ...account,
      numSubEntries: account.numSubEntries + 1,
      lastModified: ctx.ledgerSeq,
    });
  }
  const room = capacity(ctx.view, source, selling, buying);
  if (room.sell <= 0n) return fail('manageSellOfferUnderfunded');
  if (room.buy <= 0n) return fail('manageSellOfferLineFull');
  const byBuying = (room.buy * BigInt(price.d())) / BigInt(price.n());
  const offered = [amount, room.sell, byBuying].reduce((a, b) => (a < b ? a : b));
  const offer: OfferRecord = {
    kind: 'offer',
    offerId: existing?.offerId ?? nextOfferId(ctx.view),
    seller: source,
    selling,
    buying,
    amount: offered,
    priceN: price.n(),
    priceD: price.d(),
    lastModified: ctx.ledgerSeq,
  };
  ctx.view.set(entryKey.offer(source, offer.offerId), offer);
  applyOfferLiabilities(ctx.view, offer, 1n, ctx.ledgerSeq);
  const entry = offerEntry(offer);
  return success(
    existing
      ? xdr.ManageOfferSuccessResultOffer.manageOfferUpdated(entry)
      : xdr.ManageOfferSuccessResultOffer.manageOfferCreated(entry),
  );
}

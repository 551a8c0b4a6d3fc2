import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Asset, Keypair, Operation, rpc, xdr } from '@stellar/stellar-sdk';
import request from 'supertest';
import { LocalNetwork, startLocalNetwork } from '../src';
import {
  buildTransfer,
  classicTransaction,
  fundedAccount,
  rpcClient,
  startTestNetwork,
  submitAndClose,
} from './helpers';
import { TESTNET_USDC } from '../src';
import { loadNetworkState } from '../src/persistence';

/** Circle's testnet USDC as published by Circle and the x402 Stellar defaults (written out here on purpose). */
const TESTNET_USDC_ISSUER = 'GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5';
const TESTNET_USDC_CONTRACT = 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA';

describe("testnet's twin", () => {
  it(
    "hosts Circle's testnet USDC: the contract id derived from code, issuer and the testnet passphrase is " +
      "testnet's",
    async () => {
      expect(TESTNET_USDC.contractId).toBe(TESTNET_USDC_CONTRACT);
      const network = await startTestNetwork();
      try {
        expect(network.assets).toEqual([
          { code: 'USDC', issuer: TESTNET_USDC_ISSUER, contractId: TESTNET_USDC_CONTRACT },
        ]);
        expect(network.issuerSecret('USDC')).toBeUndefined();
        const described = await request(network.baseUrl).get('/');
        expect(described.body.assets).toEqual([
          { code: 'USDC', issuer: TESTNET_USDC_ISSUER, contractId: TESTNET_USDC_CONTRACT },
        ]);
      } finally {
        await network.stop();
      }
    },
  );
});

describe('friendbot and faucet', () => {
  let network: LocalNetwork;

  beforeAll(async () => {
    network = await startTestNetwork({ friendbotXlm: '250' });
  });

  afterAll(() => network.stop());

  it('GET /friendbot creates and funds an account, and funding it again answers 400 like testnet', async () => {
    const addr = Keypair.random().publicKey();
    const first = await request(network.baseUrl).get('/friendbot').query({ addr });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ successful: true, label: 'local simulation' });
    expect(first.body.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(network.balance(addr, 'XLM')).toBe('250');
    const tx = await rpcClient(network).getTransaction(first.body.hash);
    expect(tx.status).toBe('SUCCESS');
    const again = await request(network.baseUrl).get('/friendbot').query({ addr });
    expect(again.status).toBe(400);
    expect(again.body.detail).toMatch(/already exists/);
  });

  it('POST /faucet adds the trustline when missing and credits the asset', async () => {
    const addr = Keypair.random().publicKey();
    await network.fundAccount(addr);
    expect(network.hasTrustline(addr, 'USDC')).toBe(false);
    const res = await request(network.baseUrl)
      .post('/faucet')
      .send({ address: addr, asset: 'USDC', amount: '12.3456789' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ code: 'USDC', issuer: TESTNET_USDC_ISSUER, contractId: TESTNET_USDC_CONTRACT });
    expect((await rpcClient(network).getTransaction(res.body.hash)).status).toBe('SUCCESS');
    expect(network.hasTrustline(addr, 'USDC')).toBe(true);
    expect(network.balance(addr, 'USDC')).toBe('12.3456789');
    const bad = await request(network.baseUrl)
      .post('/faucet')
      .send({ address: addr, asset: 'USDC', amount: '0.123456789' });
    expect(bad.status).toBe(400);
  });

  it('POST /surge raises the minimum inclusion fee getFeeStats reports; a bad body answers 400', async () => {
    const server = rpcClient(network);
    expect((await request(network.baseUrl).post('/surge').send({ minInclusionFee: '750' })).body).toMatchObject({
      minInclusionFee: '750',
      label: 'local simulation',
    });
    try {
      expect((await server.getFeeStats()).sorobanInclusionFee.p50).toBe('750');
    } finally {
      expect((await request(network.baseUrl).post('/surge').send({ minInclusionFee: '100' })).status).toBe(200);
    }
    expect((await request(network.baseUrl).post('/surge').send({ minInclusionFee: 50 })).status).toBe(400);
    expect((await request(network.baseUrl).post('/surge').send({ minInclusionFee: '50' })).status).toBe(400);
  });

  it('POST /trustline-flags freezes and unfreezes a USDC trustline; a missing trustline answers 400', async () => {
    const holder = await fundedAccount(network, '1');
    const freeze = await request(network.baseUrl)
      .post('/trustline-flags')
      .send({ address: holder.publicKey(), asset: 'USDC', authorized: false });
    expect(freeze.status).toBe(200);
    expect(freeze.body).toMatchObject({ authorized: false, hash: null });
    const flags = async () => {
      const key = xdr.LedgerKey.trustline(
        new xdr.LedgerKeyTrustLine({
          accountId: holder.xdrAccountId(),
          asset: new Asset('USDC', TESTNET_USDC_ISSUER).toTrustLineXDRObject(),
        }),
      );
      return (await rpcClient(network).getLedgerEntries(key)).entries[0].val.trustLine().flags();
    };
    expect(await flags()).toBe(0);
    expect(
      (
        await request(network.baseUrl)
          .post('/trustline-flags')
          .send({ address: holder.publicKey(), asset: 'USDC', authorized: true })
      ).status,
    ).toBe(200);
    expect(await flags()).toBe(1);
    const none = await request(network.baseUrl)
      .post('/trustline-flags')
      .send({ address: Keypair.random().publicKey(), asset: 'USDC', authorized: false });
    expect(none.status).toBe(400);
  });

  it('balance() is "0" for an account without the asset', () => {
    expect(network.balance(Keypair.random().publicKey(), 'USDC')).toBe('0');
  });
});

describe('ledger clock', () => {
  it('when ledgerCloseMs is set, ledgers close by themselves and apply queued transactions', async () => {
    const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 20 });
    try {
      const start = network.latestLedger();
      await new Promise((r) => setTimeout(r, 150));
      expect(network.latestLedger()).toBeGreaterThanOrEqual(start + 3);
      const payer = await fundedAccount(network, '5');
      const payee = await fundedAccount(network, '0.0000001');
      const server = rpcClient(network);
      const tx = await buildTransfer({
        network,
        server,
        submitter: payer,
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 10_000_000n,
      });
      const sent = await server.sendTransaction(tx);
      const final = await server.pollTransaction(sent.hash, { attempts: 50, sleepStrategy: () => 20 });
      expect(final.status).toBe(rpc.Api.GetTransactionStatus.SUCCESS);
      expect(network.balance(payee.publicKey(), 'USDC')).toBe('1.0000001');
    } finally {
      await network.stop();
    }
  });
});

describe('restart with a data file', () => {
  it('keeps balances, trustlines, nonces, transactions, the ledger sequence and the issuers', async () => {
    const dataFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'local-network-')), 'state.json');
    const first = await startLocalNetwork({ port: 0, ledgerCloseMs: 0, dataFile });
    const server1 = rpcClient(first);
    const payer = await fundedAccount(first, '40');
    const payee = await fundedAccount(first, '0.0000001');
    const submitter = await fundedAccount(first, '0');
    const tx = await buildTransfer({
      network: first,
      server: server1,
      submitter,
      from: payer.publicKey(),
      to: payee.publicKey(),
      amount: 15_000_000n,
      authSigner: payer,
      expiration: first.latestLedger() + 100,
    });
    expect((await submitAndClose(first, server1, tx)).status).toBe('SUCCESS');
    const ledger = first.latestLedger();
    const issuer = first.assets[0].issuer;
    await first.stop();

    const second = await startLocalNetwork({ port: 0, ledgerCloseMs: 0, dataFile });
    try {
      const server2 = rpcClient(second);
      expect(second.latestLedger()).toBe(ledger);
      expect(second.assets[0].issuer).toBe(issuer);
      expect(second.balance(payer.publicKey(), 'USDC')).toBe('38.5');
      expect(second.balance(payee.publicKey(), 'USDC')).toBe('1.5000001');
      expect(second.hasTrustline(payee.publicKey(), 'USDC')).toBe(true);
      expect((await server2.getTransaction(tx.hash().toString('hex'))).status).toBe('SUCCESS');
      const replay = await server2.simulateTransaction(tx);
      expect(rpc.Api.isSimulationError(replay) && replay.error).toMatch(/already used/);
      expect(fs.readdirSync(path.dirname(dataFile))).toEqual(['state.json']);
    } finally {
      await second.stop();
    }
  });
});

describe("restart with a data file keeps the rules' state", () => {
  it(
    'keeps signers and thresholds, offers with their liabilities, frozen trustlines and contract accounts with ' +
      'their balances',
    async () => {
      const dataFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'local-network-')), 'state.json');
      const first = await startLocalNetwork({ port: 0, ledgerCloseMs: 0, dataFile });
      const server1 = rpcClient(first);
      const owner = await fundedAccount(first, '50');
      const cosigner = Keypair.random();
      const usdc = new Asset('USDC', first.assets[0].issuer);
      const { final } = await classicTransaction(
        first,
        server1,
        owner.publicKey(),
        [owner],
        [
          Operation.setOptions({ signer: { ed25519PublicKey: cosigner.publicKey(), weight: 2 }, medThreshold: 2 }),
          Operation.manageSellOffer({ selling: usdc, buying: Asset.native(), amount: '20', price: '1' }),
        ],
      );
      expect(final?.status).toBe('SUCCESS');
      const frozen = await fundedAccount(first, '1');
      await first.setTrustlineAuthorized(frozen.publicKey(), 'USDC', false);
      const contractId = await first.deployContractAccount(Keypair.random().publicKey());
      await first.faucet(contractId, 'USDC', '3');
      await first.stop();

      const second = await startLocalNetwork({ port: 0, ledgerCloseMs: 0, dataFile });
      try {
        const server2 = rpcClient(second);
        const accountKey = xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId: owner.xdrAccountId() }));
        const account = (await server2.getLedgerEntries(accountKey)).entries[0].val.account();
        expect([...account.thresholds()]).toEqual([1, 0, 2, 0]);
        expect(account.signers()[0].weight()).toBe(2);
        const line = (key: Keypair) =>
          xdr.LedgerKey.trustline(
            new xdr.LedgerKeyTrustLine({ accountId: key.xdrAccountId(), asset: usdc.toTrustLineXDRObject() }),
          );
        const ownerLine = (await server2.getLedgerEntries(line(owner))).entries[0].val.trustLine();
        expect(ownerLine.ext().v1().liabilities().selling().toString()).toBe('200000000');
        expect((await server2.getLedgerEntries(line(frozen))).entries[0].val.trustLine().flags()).toBe(0);
        expect(second.balance(contractId, 'USDC')).toBe('3');
        expect(await second.deployContractAccount(Keypair.random().publicKey())).not.toBe(contractId);
      } finally {
        await second.stop();
      }
    },
  );
});

describe('a data file from the old local USDC issuer', () => {
  it('moves its USDC trustlines and contract balances to the hosted USDC, so wallets keep their funds', async () => {
    const dataFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'local-network-')), 'state.json');
    const oldIssuer = Keypair.random();
    const first = await startLocalNetwork({
      port: 0,
      ledgerCloseMs: 0,
      dataFile,
      assets: [{ code: 'USDC', issuerSecret: oldIssuer.secret() }],
    });
    const holder = await fundedAccount(first, '7.25');
    expect(first.assets[0].issuer).toBe(oldIssuer.publicKey());
    await first.stop();
    // The old format: the USDC issuer secret is in the file's issuers.
    expect(loadNetworkState(dataFile)!.issuers).toEqual([{ code: 'USDC', secret: oldIssuer.secret() }]);

    const second = await startLocalNetwork({ port: 0, ledgerCloseMs: 0, dataFile });
    try {
      expect(second.migrated).toEqual([
        { code: 'USDC', fromIssuer: oldIssuer.publicKey(), toIssuer: TESTNET_USDC_ISSUER, entries: 2 },
      ]);
      expect(second.assets[0]).toEqual({
        code: 'USDC',
        issuer: TESTNET_USDC_ISSUER,
        contractId: TESTNET_USDC_CONTRACT,
      });
      expect(second.balance(holder.publicKey(), 'USDC')).toBe('7.25');
      const receiver = await fundedAccount(second, '0.0000001');
      const server = rpcClient(second);
      const tx = await buildTransfer({
        network: second,
        server,
        submitter: holder,
        from: holder.publicKey(),
        to: receiver.publicKey(),
        amount: 2_500_000n,
      });
      expect((await submitAndClose(second, server, tx)).status).toBe('SUCCESS');
      expect(second.balance(receiver.publicKey(), 'USDC')).toBe('0.2500001');
    } finally {
      await second.stop();
    }
    expect(loadNetworkState(dataFile)!.issuers).toEqual([]);
  });
});

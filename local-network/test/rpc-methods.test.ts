import { randomBytes } from 'node:crypto';
import {
  Address,
  Asset,
  BASE_FEE,
  Contract,
  Keypair,
  Networks,
  StrKey,
  TransactionBuilder,
  nativeToScVal,
  rpc,
  scValToNative,
  xdr,
} from '@stellar/stellar-sdk';
import { LocalNetwork } from '../src';
import { buildTransfer, fundedAccount, rpcClient, startTestNetwork } from './helpers';

describe('Soroban RPC methods answered by the local network, read with the stock rpc.Server', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let payer: Keypair;
  let payee: Keypair;

  beforeAll(async () => {
    network = await startTestNetwork();
    server = rpcClient(network);
    payer = await fundedAccount(network, '50');
    payee = await fundedAccount(network, '0');
    await network.faucet(payee.publicKey(), 'USDC', '1');
  });

  afterAll(() => network.stop());

  it('getHealth reports healthy with the ledger window', async () => {
    const health = await server.getHealth();
    expect(health).toMatchObject({ status: 'healthy', oldestLedger: 1 });
    expect(health.latestLedger).toBe(network.latestLedger());
  });

  it('getNetwork serves the testnet passphrase and a friendbot URL', async () => {
    const info = await server.getNetwork();
    expect(info.passphrase).toBe(Networks.TESTNET);
    expect(info.friendbotUrl).toBe(`${network.baseUrl}/friendbot`);
  });

  it('getLatestLedger advances by one per closeLedger()', async () => {
    const before = await server.getLatestLedger();
    const closed = await network.closeLedger();
    const after = await server.getLatestLedger();
    expect(closed).toBe(before.sequence + 1);
    expect(after.sequence).toBe(closed);
    expect(after.id).toMatch(/^[0-9a-f]{64}$/);
    expect(after.id).not.toBe(before.id);
  });

  it('getVersionInfo and getFeeStats answer in the SDK shapes', async () => {
    const version = await server.getVersionInfo();
    expect(version.protocolVersion).toBe(23);
    const fees = await server.getFeeStats();
    expect(fees.sorobanInclusionFee.p50).toBe('100');
    expect(fees.latestLedger).toBe(network.latestLedger());
  });

  it(
    'getLedgerEntries serves accounts (getAccount), trustlines ' + 'and the SAC instance; missing keys are absent',
    async () => {
      const account = await server.getAccount(payer.publicKey());
      expect(account.accountId()).toBe(payer.publicKey());
      const usdc = new Asset('USDC', network.assets[0].issuer);
      const line = await server.getTrustline(payer.publicKey(), usdc);
      expect(line.balance().toString()).toBe('500000000');
      const balance = await server.getAssetBalance(payer.publicKey(), usdc);
      expect(balance.balanceEntry?.amount).toBe('500000000');
      const instance = await server.getContractData(
        network.assets[0].contractId,
        xdr.ScVal.scvLedgerKeyContractInstance(),
      );
      expect(instance.val.contractData().val().instance().executable().switch().name).toBe(
        'contractExecutableStellarAsset',
      );
      await expect(server.getAccount(Keypair.random().publicKey())).rejects.toThrow(/Account not found/);
      const none = await server.getLedgerEntries(
        xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId: Keypair.random().xdrAccountId() })),
      );
      expect(none.entries).toEqual([]);
    },
  );

  it(
    'simulateTransaction of a signed transfer returns the footprint, a resource fee under 50,000 stroops and the ' +
      'SEP-41 transfer event among its diagnostic events',
    async () => {
      const tx = await buildTransfer({
        network,
        server,
        submitter: payee,
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 10_000_000n,
        authSigner: payer,
      });
      const draft = await server.simulateTransaction(tx);
      if (!rpc.Api.isSimulationSuccess(draft)) throw new Error(draft.error);
      const fee = Number(draft.minResourceFee);
      expect(fee).toBeGreaterThan(0);
      expect(fee).toBeLessThan(50_000);
      const footprint = draft.transactionData.build().resources().footprint();
      expect(footprint.readOnly().length + footprint.readWrite().length).toBeGreaterThanOrEqual(4);

      // Diagnostic mode, as the real RPC simulates: fn_call, the SAC's contract event, fn_return.
      const all = draft.events.map((e) => e.event());
      expect(all.map((e) => [e.type().name, e.body().v0().topics()[0].sym().toString()])).toEqual([
        ['diagnostic', 'fn_call'],
        ['contract', 'transfer'],
        ['diagnostic', 'fn_return'],
      ]);
      const events = all.filter((e) => e.type().name === 'contract');
      const topics = events[0].body().v0().topics();
      expect(topics[0].sym().toString()).toBe('transfer');
      expect(scValToNative(topics[1])).toBe(payer.publicKey());
      expect(scValToNative(topics[2])).toBe(payee.publicKey());
      expect(scValToNative(topics[3])).toBe(`USDC:${network.assets[0].issuer}`);
      expect(scValToNative(events[0].body().v0().data())).toBe(10_000_000n);
      expect(StrKey.encodeContract(events[0].contractId() as unknown as Buffer)).toBe(network.assets[0].contractId);
    },
  );

  it(
    'simulateTransaction without signatures records a fresh ' + 'unsigned address credential with the root invocation',
    async () => {
      const tx = await buildTransfer({
        network,
        server,
        submitter: payee,
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 1n,
      });
      const op = tx.operations[0] as { auth?: xdr.SorobanAuthorizationEntry[] };
      const recorded = op.auth ?? [];
      expect(recorded).toHaveLength(1);
      const creds = recorded[0].credentials().address();
      expect(Address.fromScAddress(creds.address()).toString()).toBe(payer.publicKey());
      expect(creds.signature().switch().name).toBe('scvVoid');
      expect(recorded[0].rootInvocation().function().contractFn().functionName().toString()).toBe('transfer');
      const again = await buildTransfer({
        network,
        server,
        submitter: payee,
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 1n,
      });
      const otherNonce = ((again.operations[0] as { auth?: xdr.SorobanAuthorizationEntry[] }).auth ?? [])[0]
        .credentials()
        .address()
        .nonce();
      expect(otherNonce.toString()).not.toBe(creds.nonce().toString());
    },
  );

  it('simulateTransaction answers an error string for a contract that is not deployed', async () => {
    const account = await server.getAccount(payer.publicKey());
    const missing = StrKey.encodeContract(randomBytes(32));
    const tx = new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: network.networkPassphrase })
      .addOperation(
        new Contract(missing).call(
          'transfer',
          nativeToScVal(payer.publicKey(), { type: 'address' }),
          nativeToScVal(payee.publicKey(), { type: 'address' }),
          nativeToScVal(1n, { type: 'i128' }),
        ),
      )
      .setTimeout(30)
      .build();
    const sim = await server.simulateTransaction(tx);
    expect(rpc.Api.isSimulationError(sim)).toBe(true);
    expect((sim as rpc.Api.SimulateTransactionErrorResponse).error).toMatch(/Error\(Storage, MissingValue\)/);
  });

  it(
    'sendTransaction answers PENDING, getTransaction NOT_FOUND until the ledger closes, then SUCCESS with meta, ' +
      'return value and events',
    async () => {
      const tx = await buildTransfer({
        network,
        server,
        submitter: payee,
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 25_000_000n,
        authSigner: payer,
      });
      const sent = await server.sendTransaction(tx);
      expect(sent.status).toBe('PENDING');
      expect(sent.hash).toBe(tx.hash().toString('hex'));
      expect((await server.getTransaction(sent.hash)).status).toBe('NOT_FOUND');

      const ledger = await network.closeLedger();
      const got = await server.getTransaction(sent.hash);
      if (got.status !== rpc.Api.GetTransactionStatus.SUCCESS) throw new Error(`status ${got.status}`);
      expect(got.ledger).toBe(ledger);
      expect(got.applicationOrder).toBe(1);
      expect(got.feeBump).toBe(false);
      expect(got.createdAt).toBeGreaterThan(1_600_000_000);
      expect(got.resultXdr.result().switch().name).toBe('txSuccess');
      expect(got.resultMetaXdr.switch()).toBe(4);
      expect(got.returnValue?.switch().name).toBe('scvVoid');
      expect(got.events.contractEventsXdr[0][0].body().v0().topics()[0].sym().toString()).toBe('transfer');
      expect(got.events.transactionEventsXdr[0].event().body().v0().topics()[0].sym().toString()).toBe('fee');
      expect(got.envelopeXdr.toXDR('base64')).toBe(tx.toXDR());
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('47.5');
      expect(network.balance(payee.publicKey(), 'USDC')).toBe('3.5');
    },
  );

  it('getEvents returns transfer events filtered by contract and topic, with a cursor', async () => {
    const events = await server.getEvents({
      startLedger: 1,
      filters: [
        {
          type: 'contract',
          contractIds: [network.assets[0].contractId],
          topics: [['AAAADwAAAAh0cmFuc2Zlcg==', '*', '*', '*']],
        },
      ],
    });
    expect(events.events.length).toBeGreaterThanOrEqual(1);
    const last = events.events[events.events.length - 1];
    expect(last.topic[0].sym().toString()).toBe('transfer');
    expect(scValToNative(last.value)).toBe(25_000_000n);
    expect(last.contractId?.contractId()).toBe(network.assets[0].contractId);
    expect(events.cursor).toBe(last.id);
    const after = await server.getEvents({ cursor: events.cursor, filters: [] });
    expect(after.events).toEqual([]);
  });

  it('getEvents rejects a start ledger outside the retention window', async () => {
    await expect(server.getEvents({ startLedger: network.latestLedger() + 10, filters: [] })).rejects.toMatchObject({
      code: -32600,
    });
  });

  it('getTransactions lists applied transactions from a start ledger', async () => {
    const page = await server.getTransactions({ startLedger: 1, pagination: { limit: 200 } });
    expect(page.transactions.length).toBeGreaterThan(3);
    expect(page.transactions.every((t) => t.resultXdr instanceof xdr.TransactionResult)).toBe(true);
  });

  it('an unknown method is a JSON-RPC method-not-found error', async () => {
    const res = await fetch(network.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'nope' }),
    });
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32601, message: 'method "nope" not found' },
    });
  });
});

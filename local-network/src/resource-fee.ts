import { xdr } from '@stellar/stellar-sdk';

/**
 * The simulator's Soroban resource fee schedule. It has the real structure (instructions, entries read and
 * written, bytes read and written, all declared in SorobanTransactionData) with local prices chosen so an SAC
 * transfer costs about 16,000 stroops, below the 50,000-stroop cap x402 facilitators apply.
 * Rent and refundable event fees are not modelled: the whole resource fee is charged.
 */
const FEE_PER_10K_INSTRUCTIONS = 25n;
const FEE_PER_READ_ENTRY = 1_000n;
const FEE_PER_WRITE_ENTRY = 2_000n;
const FEE_PER_KB_READ = 1_000n;
const FEE_PER_KB_WRITE = 3_000n;

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/** The minimum resource fee for the declared resources. */
export function resourceFeeOf(resources: xdr.SorobanResources): bigint {
  const footprint = resources.footprint();
  const readEntries = BigInt(footprint.readOnly().length + footprint.readWrite().length);
  const writeEntries = BigInt(footprint.readWrite().length);
  return (
    ceilDiv(BigInt(resources.instructions()) * FEE_PER_10K_INSTRUCTIONS, 10_000n) +
    readEntries * FEE_PER_READ_ENTRY +
    writeEntries * FEE_PER_WRITE_ENTRY +
    ceilDiv(BigInt(resources.diskReadBytes()) * FEE_PER_KB_READ, 1024n) +
    ceilDiv(BigInt(resources.writeBytes()) * FEE_PER_KB_WRITE, 1024n)
  );
}

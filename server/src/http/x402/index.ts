export { X402_REASONS, x402Reason } from './reasons';
export { translate, toAtomic, assetByContract } from './translate';

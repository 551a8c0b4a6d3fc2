export { x402Handlers, type X402Deps, type X402Handlers, type X402Operation } from './x402-handlers';
export { X402_REASONS, x402Reason } from './reasons';
export { translate, toAtomic, assetByContract } from './translate';

import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import type { ResourceConformance } from '../../domain/conformance/types';
import { isOperatorOrSeller, type Principal } from '../../domain/auth/principal';
import { notFound } from '../../domain/errors';
import { presentPage, presentResource, presentResourceDetail, presentVersion } from '../presenters';
import { presentTrust } from '../presenters-discovery';

/** A soft-deleted resource is shown only to its seller and the operator; to anyone else it does not exist (404). */
function visible<R extends { id: string; sellerId: string; status: string }>(principal: Principal, r: R): R {
  if (r.status === 'deleted' && !isOperatorOrSeller(principal, r.sellerId)) throw notFound('resource', r.id);
  return r;
}

type ResourceHandlers = Pick<
  Handlers,
  | 'listResources'
  | 'createResource'
  | 'getResource'
  | 'updateResource'
  | 'deleteResource'
  | 'listResourceVersions'
  | 'createTermsConfirmation'
>;

const presentConformance = (rc: ResourceConformance) => ({
  ...rc,
  checkedAt: rc.checkedAt ? rc.checkedAt.toISOString() : null,
  uptime: rc.uptime === null ? null : Math.round(rc.uptime * 1000) / 1000,
});

/** The Resources tag: a seller's catalog entries and their versions; a read shows the resource's conformance state. */
export function resourceHandlers({ resources, resourceConformance, trust }: HandlerServices): ResourceHandlers {
  return {
    async listResources({ principal, query }) {
      const { cursor, limit, ...filters } = query;
      return {
        status: 200,
        body: presentPage(await resources.list(principal, filters, { cursor, limit }), presentResource),
      };
    },
    async createResource({ principal, body }) {
      const created = await resources.create(principal, { ...body, extensions: body.extensions ?? {} });
      return { status: 201, body: { ...presentResourceDetail(created), warnings: created.warnings } };
    },
    async getResource({ principal, params }) {
      const detail = presentResourceDetail(visible(principal, await resources.get(params.id)));
      const [conformance, trustBlock] = await Promise.all([resourceConformance(params.id), trust.get(params.id)]);
      return {
        status: 200,
        body: { ...detail, conformance: presentConformance(conformance), trust: presentTrust(trustBlock) },
      };
    },
    async updateResource({ principal, params, body }) {
      return { status: 200, body: presentResourceDetail(await resources.update(principal, params.id, body)) };
    },
    async deleteResource({ principal, params }) {
      return { status: 200, body: await resources.remove(principal, params.id) };
    },
    async createTermsConfirmation({ principal, params, body }) {
      const r = await trust.confirm(principal, params.id, body?.kind ?? null);
      return { status: 200, body: { resourceId: r.resourceId, confirmed: r.confirmed, trust: presentTrust(r.trust) } };
    },
    async listResourceVersions({ principal, params, query }) {
      visible(principal, await resources.get(params.id));
      return { status: 200, body: presentPage(await resources.versions(params.id, query), presentVersion) };
    },
  };
}

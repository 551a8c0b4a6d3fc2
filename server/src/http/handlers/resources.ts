import type { Handlers } from '../operation-types';
import type { HandlerDeps } from './deps';
import { presentPage, presentResource, presentResourceDetail, presentVersion } from '../presenters';

type ResourceHandlers = Pick<Handlers, 'listResources' | 'createResource' | 'getResource' | 'updateResource' | 'deleteResource' | 'listResourceVersions'>;

export function resourceHandlers({ resources }: HandlerDeps): ResourceHandlers {
  return {
    async listResources({ principal, query }) {
      const { cursor, limit, ...filters } = query;
      return { status: 200, body: presentPage(await resources.list(principal, filters, { cursor, limit }), presentResource) };
    },
    async createResource({ principal, body }) {
      return { status: 201, body: presentResourceDetail(await resources.create(principal, { ...body, extensions: body.extensions ?? {} })) };
    },
    async getResource({ params }) {
      return { status: 200, body: presentResourceDetail(await resources.get(params.id)) };
    },
    async updateResource({ principal, params, body }) {
      return { status: 200, body: presentResourceDetail(await resources.update(principal, params.id, body)) };
    },
    async deleteResource({ principal, params }) {
      return { status: 200, body: await resources.remove(principal, params.id) };
    },
    async listResourceVersions({ params, query }) {
      return { status: 200, body: presentPage(await resources.versions(params.id, query), presentVersion) };
    },
  };
}

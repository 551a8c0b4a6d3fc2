import type { RequestHandler, Response } from 'express';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * Response validation (RESPONSE_VALIDATION; on in tests: a response that breaks the contract is a 500): every JSON
 * body a route sends is checked against its operation's response schema for that status.
 *
 * Why not express-openapi-validator's `validateResponses`: it compiles one schema per route and status code, each
 * with the whole spec's `paths` and `components` attached, so Ajv walks the entire spec again for every one of them.
 * Measured: ~1.5 s of CPU per test file (of ~8), a sixth of the server suite's CPU. Here the spec is added to one Ajv
 * instance once (one walk), and each (operation, status) validator is a `$ref` into it, compiled on first use; the
 * component schemas it reaches are compiled once per instance. Same engine (Ajv's JSON Schema 2020-12, the OpenAPI
 * 3.1 dialect), same formats, same outcome: an error with status 500 that the error handler answers as
 * INTERNAL_ERROR. The request side stays with express-openapi-validator.
 */
const SPEC_ID = 'openapi.json';

type ResponseObject = { $ref?: string; content?: Record<string, { schema?: unknown }> };
type Spec = {
  paths: Record<string, Record<string, { responses?: Record<string, ResponseObject> } | undefined>>;
  components?: { responses?: Record<string, ResponseObject> };
};

/** One JSON Pointer token (RFC 6901). */
const token = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** The response object the status resolves to (exact code, then 2XX-style range, then default), and its pointer. */
function responseFor(
  spec: Spec,
  path: string,
  method: string,
  status: number,
): { pointer: string; response: ResponseObject } | null {
  const responses = spec.paths[path]?.[method]?.responses ?? {};
  const code = [String(status), `${String(status)[0]}XX`, 'default'].find((c) => c in responses);
  if (!code) return null;
  const response = responses[code];
  const ref = response.$ref?.match(/^#\/components\/responses\/([^/]+)$/)?.[1];
  if (ref && spec.components?.responses?.[ref])
    return { pointer: `#/components/responses/${ref}`, response: spec.components.responses[ref] };
  return { pointer: `#/paths/${token(path)}/${method}/responses/${code}`, response };
}

function contractError(message: string, errors: Array<{ path?: string; message?: string }>): Error {
  return Object.assign(new Error(message), { status: 500, errors });
}

export function responseValidation(spec: Spec): RequestHandler {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv, ['date', 'date-time']);
  // The document is an OpenAPI description, not a JSON Schema: checking it against the meta-schema (Ajv's default)
  // is wasted start-up work (the contract is linted by redocly at generate time); each compiled response schema is
  // still checked when it is compiled.
  ajv.addSchema(spec as object, SPEC_ID, undefined, false);
  const validators = new Map<string, ValidateFunction | null>();

  const validatorFor = (path: string, method: string, status: number): ValidateFunction | null | undefined => {
    const found = responseFor(spec, path, method, status);
    if (!found) return undefined;
    const mediaType = Object.keys(found.response.content ?? {}).find((t) => /^application\/(.+\+)?json/.test(t));
    if (!mediaType || found.response.content?.[mediaType]?.schema === undefined) return null;
    const pointer = `${SPEC_ID}${found.pointer}/content/${token(mediaType)}/schema`;
    if (!validators.has(pointer)) validators.set(pointer, ajv.compile({ $ref: pointer }));
    return validators.get(pointer) ?? null;
  };

  return (req, res, next) => {
    const json = res.json.bind(res) as Response['json'];
    res.json = (body: unknown) => {
      res.json = json; // once: the error handler's own envelope is sent unchecked if this one throws
      const route = (req as { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute;
      // 5xx bodies pass unchecked, as express-openapi-validator left them: they are the error handler's own envelope.
      if (!route || res.statusCode === 304 || res.statusCode >= 500) return json(body);
      const validate = validatorFor(route, req.method.toLowerCase(), res.statusCode);
      if (validate === undefined)
        throw contractError(`no schema defined for status code '${res.statusCode}' in the openapi spec`, []);
      if (validate && !validate(body)) {
        const errors = (validate.errors ?? []).map((e) => ({
          path: `.response${e.instancePath.replace(/\//g, '.')}`,
          message: e.message,
        }));
        throw contractError(
          `The response does not match the API contract: ${ajv.errorsText(validate.errors, { dataVar: 'response' })}`,
          errors,
        );
      }
      return json(body);
    };
    next();
  };
}

import type { ValidationIssue } from './resource-rules';
import type { ResourceTerms } from './resource-rules';
import { checkJsonSchema, compileSchema } from './json-schema';
import { sameJson } from './term-fields';

/**
 * Extension metadata rules: x402 Bazaar (`extensions.bazaar` with `info` and `schema`) and MCP tool metadata
 * (`extensions.mcp` with `toolName`, or the older `tool`). Ambiguous MCP metadata is refused:
 *
 * - a `type: mcp` resource without a tool name, or with two different names (`toolName` vs `tool`, vs the MCP
 *   `name`, vs the Bazaar `info.input.toolName`/`tool`);
 * - a tool name that differs from the one its input schema names (`x-mcp-tool` keyword of the resource's
 *   `inputSchema` or of `extensions.mcp.inputSchema`), or an `extensions.mcp.inputSchema` that differs from the
 *   resource's `inputSchema`;
 * - a type mismatch: Bazaar `info.input.type` says http on an mcp resource or the reverse (the mcp extension on an
 *   http resource is refused by the base rules);
 * - the same tool name on the same MCP server URL as another active resource (checked by the caller, which has
 *   the catalog; see `mcpToolName`).
 */
export const MCP_TOOL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,119}$/;
const HTTP_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The declared MCP tool name of a resource (toolName, else the older tool), or null. */
export function mcpToolName(extensions: Obj): string | null {
  const mcp = extensions.mcp;
  if (!isObj(mcp)) return null;
  const name = typeof mcp.toolName === 'string' ? mcp.toolName : typeof mcp.tool === 'string' ? mcp.tool : null;
  return name;
}

function bazaarToolName(bazaar: unknown): string | null {
  if (!isObj(bazaar) || !isObj(bazaar.info) || !isObj(bazaar.info.input)) return null;
  const input = bazaar.info.input;
  return typeof input.toolName === 'string' ? input.toolName : typeof input.tool === 'string' ? input.tool : null;
}

export function checkExtensions(
  terms: ResourceTerms,
  prefix: string,
): { errors: ValidationIssue[]; warnings: ValidationIssue[] } {
  const errors: ValidationIssue[] = [];
  const warnings: ValidationIssue[] = [];
  const ext = terms.extensions;
  if (!isObj(ext)) return { errors, warnings };
  const f = (s: string) => `${prefix}extensions.${s}`;

  // x402 Bazaar
  if ('bazaar' in ext) {
    const bazaar = ext.bazaar;
    if (!isObj(bazaar)) {
      errors.push({
        code: 'CATALOG_VALIDATION_FAILED',
        field: f('bazaar'),
        message: 'must be an object',
        reason: 'extension',
      });
    } else {
      let schemaOk = false;
      if ('schema' in bazaar) {
        const problem = checkJsonSchema(bazaar.schema);
        if (problem)
          errors.push({
            code: 'CATALOG_VALIDATION_FAILED',
            field: f('bazaar.schema'),
            message: problem,
            reason: 'invalid_schema',
          });
        else schemaOk = true;
      }
      if (!('info' in bazaar)) {
        warnings.push({
          code: 'CATALOG_VALIDATION_FAILED',
          field: f('bazaar.info'),
          message: 'No Bazaar info; x402 Bazaar clients will not see how to call the resource',
          reason: 'extension',
        });
      } else if (!isObj(bazaar.info)) {
        errors.push({
          code: 'CATALOG_VALIDATION_FAILED',
          field: f('bazaar.info'),
          message: 'must be an object',
          reason: 'extension',
        });
      } else {
        if (schemaOk) {
          const mismatch = compileSchema(bazaar.schema as object)(bazaar.info);
          if (mismatch)
            errors.push({
              code: 'CATALOG_VALIDATION_FAILED',
              field: f('bazaar.info'),
              message: `does not match extensions.bazaar.schema: ${mismatch}`,
              reason: 'extension',
            });
        } else if (!('schema' in bazaar)) {
          warnings.push({
            code: 'CATALOG_VALIDATION_FAILED',
            field: f('bazaar.schema'),
            message: 'No Bazaar schema; info cannot be checked',
            reason: 'extension',
          });
        }
        const input = bazaar.info.input;
        if (input !== undefined && !isObj(input)) {
          errors.push({
            code: 'CATALOG_VALIDATION_FAILED',
            field: f('bazaar.info.input'),
            message: 'must be an object',
            reason: 'extension',
          });
        } else if (isObj(input)) {
          if (input.type !== undefined && input.type !== terms.type) {
            errors.push({
              code: 'CATALOG_VALIDATION_FAILED',
              field: f('bazaar.info.input.type'),
              message: `says ${String(input.type)} but the resource type is ${terms.type}`,
              reason: terms.type === 'mcp' || input.type === 'mcp' ? 'ambiguous_mcp' : 'extension',
            });
          }
          if (
            input.method !== undefined &&
            (typeof input.method !== 'string' || !HTTP_METHODS.has(input.method.toUpperCase()))
          ) {
            errors.push({
              code: 'CATALOG_VALIDATION_FAILED',
              field: f('bazaar.info.input.method'),
              message: 'must be an HTTP method',
              reason: 'extension',
            });
          }
        }
      }
    }
  }

  // MCP
  const mcp = ext.mcp;
  if (terms.type === 'mcp') {
    if (!isObj(mcp)) {
      errors.push({
        code: 'CATALOG_VALIDATION_FAILED',
        field: f('mcp'),
        message: 'a resource of type mcp needs extensions.mcp with its toolName',
        reason: 'ambiguous_mcp',
      });
      return { errors, warnings };
    }
    const names = new Set<string>();
    for (const key of ['toolName', 'tool', 'name'] as const) {
      if (mcp[key] === undefined) continue;
      if (typeof mcp[key] !== 'string' || !MCP_TOOL_NAME.test(mcp[key] as string)) {
        errors.push({
          code: 'CATALOG_VALIDATION_FAILED',
          field: f(`mcp.${key}`),
          message: 'must be a tool name of 1 to 120 characters A-Z a-z 0-9 _ . -',
          reason: 'ambiguous_mcp',
        });
      } else names.add(mcp[key] as string);
    }
    const fromBazaar = bazaarToolName(ext.bazaar);
    if (fromBazaar !== null) names.add(fromBazaar);
    if (mcp.toolName === undefined && mcp.tool === undefined) {
      errors.push({
        code: 'CATALOG_VALIDATION_FAILED',
        field: f('mcp.toolName'),
        message: 'missing tool name (toolName, or the older tool)',
        reason: 'ambiguous_mcp',
      });
    } else if (names.size > 1) {
      errors.push({
        code: 'CATALOG_VALIDATION_FAILED',
        field: f('mcp.toolName'),
        message: `ambiguous tool name: ${[...names].join(', ')}`,
        reason: 'ambiguous_mcp',
      });
    }
    const toolName = mcpToolName(ext);
    if (mcp.description !== undefined && typeof mcp.description !== 'string') {
      errors.push({
        code: 'CATALOG_VALIDATION_FAILED',
        field: f('mcp.description'),
        message: 'must be a string',
        reason: 'ambiguous_mcp',
      });
    }
    if (mcp.inputSchema !== undefined) {
      const problem = checkJsonSchema(mcp.inputSchema);
      if (problem)
        errors.push({
          code: 'CATALOG_VALIDATION_FAILED',
          field: f('mcp.inputSchema'),
          message: problem,
          reason: 'invalid_schema',
        });
      else if (!sameJson(mcp.inputSchema, terms.inputSchema)) {
        errors.push({
          code: 'CATALOG_VALIDATION_FAILED',
          field: f('mcp.inputSchema'),
          message: 'differs from resource.inputSchema: the tool would have two input schemas',
          reason: 'ambiguous_mcp',
        });
      }
    }
    for (const [field, schema] of [
      ['inputSchema', terms.inputSchema],
      ['extensions.mcp.inputSchema', mcp.inputSchema],
    ] as const) {
      if (!isObj(schema) || schema['x-mcp-tool'] === undefined || toolName === null) continue;
      if (schema['x-mcp-tool'] !== toolName) {
        errors.push({
          code: 'CATALOG_VALIDATION_FAILED',
          field: `${prefix}${field}`,
          message:
            `the input schema names tool ` +
            `${JSON.stringify(schema['x-mcp-tool'])} but the tool name ` +
            `is ${toolName}`,
          reason: 'ambiguous_mcp',
        });
      }
    }
  }
  return { errors, warnings };
}

/**
 * The few JSON Schema (2020-12, the dialect of OpenAPI 3.1) builders the API's
 * shapes are written with. `object` makes every property required unless it
 * is named optional, so a shape cannot forget its `required` list and a
 * generated client never sees an always-sent field as optional.
 */

export type JsonSchema = { readonly [keyword: string]: unknown };

export const stringSchema: JsonSchema = { type: "string" };
export const integerSchema: JsonSchema = { type: "integer" };
export const booleanSchema: JsonSchema = { type: "boolean" };
export const dateTimeSchema: JsonSchema = { type: "string", format: "date-time" };
export const dateSchema: JsonSchema = { type: "string", format: "date" };
export const uriSchema: JsonSchema = { type: "string", format: "uri" };

/** Bytes of any media type: `format: binary` for OpenAPI tools, contentMediaType for JSON Schema. */
export const binarySchema: JsonSchema = {
  type: "string",
  format: "binary",
  contentMediaType: "application/octet-stream",
};

/** The same schema, or null; always sent, so a client checks for null rather than absence. */
export function nullable(schema: JsonSchema): JsonSchema {
  if (Array.isArray(schema.enum)) return { ...schema, enum: [...schema.enum, null] };
  return { ...schema, type: [schema.type, "null"] };
}

export function arrayOf(items: JsonSchema, extra: JsonSchema = {}): JsonSchema {
  return { type: "array", items, ...extra };
}

export function enumOf(values: readonly string[], extra: JsonSchema = {}): JsonSchema {
  return { type: "string", enum: [...values], ...extra };
}

export interface ObjectOptions {
  /** Properties that are not always present; every other property is required. */
  optional?: readonly string[];
  description?: string;
}

export function objectOf(
  properties: Record<string, JsonSchema>,
  options: ObjectOptions = {},
): JsonSchema {
  const optional = new Set(options.optional ?? []);
  for (const name of optional) {
    if (!(name in properties)) throw new Error(`optional property ${name} is not a property`);
  }
  return {
    type: "object",
    ...(options.description ? { description: options.description } : {}),
    required: Object.keys(properties).filter((name) => !optional.has(name)),
    properties,
  };
}

/** A reference to a shape published under components.schemas. */
export function schemaRef(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

/**
 * A real object with one or two of its members behaving otherwise: for a test
 * that needs the real store (or a staged piece) to hold, count or fail at one
 * point and be itself everywhere else.
 */
export function withOverrides<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(object, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof T];
      const value = Reflect.get(object, key, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

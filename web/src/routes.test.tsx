import { describe, expect, it } from "vitest";
import { ROUTES } from "./routes";
import PAGES from "./pages.json";
import { match } from "./router";

/** The pattern of the first route that takes `path`, as the app picks it. */
const routeOf = (path: string) => ROUTES.find(([pattern]) => match(pattern, path))?.[0];

describe("the route table", () => {
  it("is pages.json, the list the server reads, each with its screen", () => {
    expect(ROUTES.map(([pattern]) => pattern)).toEqual(Object.values(PAGES));
    for (const [, screen] of ROUTES) expect(typeof screen).toBe("function");
  });

  it("picks the right page for each path, literal paths before parameters", () => {
    expect(routeOf("/agents")).toBe("/agents");
    expect(routeOf("/agents/new")).toBe("/agents/new");
    expect(routeOf("/agents/a1")).toBe("/agents/:id");
    expect(routeOf("/agents/a1/")).toBe("/agents/:id");
    expect(routeOf("/agents/a1/edit")).toBe("/agents/:id/edit");
    expect(routeOf("/agents/a1/chat/c1")).toBe("/agents/:id/chat/:conversation");
    expect(routeOf("/agents/a1/memory/blocks")).toBeUndefined();
  });
});

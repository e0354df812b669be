import { useEffect, useState } from "react";
import { get } from "./api";
import type { Agent } from "./types";

/** The names of an agent's specialists by id, read once the agent is: a nested turn is
 * said to be theirs by name (its events carry only the id). */
export function useSpecialistNames(agent: Agent | null): Record<string, string> {
  const [names, setNames] = useState<Record<string, string>>({});
  const ids = (agent?.specialists ?? []).join(",");
  useEffect(() => {
    if (!ids) return;
    let current = true;
    Promise.all(
      ids.split(",").map((id) =>
        get<Agent>(`/agents/${encodeURIComponent(id)}`).then(
          (a) => [id, a.name] as const,
          () => null, // deleted since: said as "A specialist"
        ),
      ),
    ).then((found) => current && setNames(Object.fromEntries(found.filter((f) => f !== null))));
    return () => {
      current = false;
    };
  }, [ids]);
  return names;
}

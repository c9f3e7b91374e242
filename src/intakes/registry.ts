/**
 * Every intake, one line each: the edge registers their routes from this
 * list (in this order, which is the order the requests Fastify answers before
 * any route are matched in), and a check thread finds an intake's WireMap here
 * by its name. A new intake is its folder and its line (docs/design.md, "Intakes").
 */
import type { WireMap } from '../pipeline/foreign-body.js';
import { AMPLITUDE_INTAKE } from './amplitude/intake.js';
import { BATCH_INTAKE } from './batch/intake.js';
import type { Intake } from './intake.js';
import { MIXPANEL_INTAKE } from './mixpanel/intake.js';
import { POSTHOG_INTAKE } from './posthog/intake.js';
import { SEGMENT_INTAKE } from './segment/intake.js';

export const INTAKES: readonly Intake[] = [
  BATCH_INTAKE,
  SEGMENT_INTAKE,
  POSTHOG_INTAKE,
  MIXPANEL_INTAKE,
  AMPLITUDE_INTAKE,
];

/** The intake named so. */
export function intakeNamed(name: string): Intake | undefined {
  return INTAKES.find((i) => i.name === name);
}

/** An intake's WireMap, telling apart the bodies other intakes claim at its paths (Intake.claims). */
function withClaims(owner: Intake, map: WireMap): WireMap {
  const theirs = INTAKES.filter((i) => i !== owner && i.claims !== undefined && owner.route.owns(i.claims.path));
  if (theirs.length === 0) return map;
  return { ...map, otherIntake: (json) => theirs.find((i) => i.claims!.isMine(json))?.name };
}

const WIRES: ReadonlyMap<string, WireMap> = new Map(INTAKES.flatMap((i) => (i.wire === null ? [] : [[i.name, withClaims(i, i.wire.map)] as const])));

/** The WireMap of the intake named so: a body in its shape is one it sent (check-threads.ts), so it has one. */
export function wireOf(intake: string): WireMap {
  const wire = WIRES.get(intake);
  if (wire === undefined) throw new Error(`no intake named ${intake} reads bodies in a shape of its own`);
  return wire;
}

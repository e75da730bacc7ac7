/** Local stand-ins for the AI providers' HTTP APIs, and the inputs the AI tests share. */
import type { StructuredField } from '../../services/ai/providers/types';

/** 50 fields of 100 options each: the spec's largest structured input, 5000 enum values. */
export function largestFields(): StructuredField[] {
  return Array.from({ length: 50 }, (_, i) => ({
    name: `field_${i}`,
    type: i % 2 === 0 ? ('enum' as const) : ('multi' as const),
    options: Array.from({ length: 100 }, (_, j) => `f${i}_option_${j}`),
  }));
}

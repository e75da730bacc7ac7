/**
 * The worker thread of visual-match.ts's pool (Piscina loads this file by name): each exported
 * function is a task the pool runs by that name.
 */
import { TASKS } from './visual-match';

export const { match, draw } = TASKS;

/**
 * The spec's AI object of a capture (AiRecord), published as its schema and built in one
 * place: by the ai service for an analysis that ran or failed, by capture when the ai service
 * could not be reached, and for the lists of screenshots that asked for none.
 */
import { type Static, Type } from '@sinclair/typebox';
import { type AiProvider, type AiRecord, OWN_AI_PROVIDERS } from '../../shared/contracts';
import { type AnalysisOptions, type ScreenshotOptions, textEnum } from '../../shared/screenshot-options';

/**
 * The AI object as stored with a screenshot and shown by snap (json=true), the account-wide
 * list and deliveries. Every field is always present (a superset of what the spec guarantees);
 * `ai_error` only when an analysis was asked for and did not run (DESIGN section 3: the
 * capture is kept, the AI credit refunded).
 */
export const AI_RECORD_SCHEMA = Type.Object({
  ai_analyzed: Type.Boolean(),
  ai_prompt: Type.String({ description: "The caller's prompt; '' when none was given and in structured mode." }),
  ai_response: Type.String({ description: "Simple mode: the text. Structured mode: ai_structured_response JSON-encoded. '' when not analysed." }),
  ai_provider: textEnum(['service', ...OWN_AI_PROVIDERS], { description: 'service (AI credits), or the own provider whose key was used.' }),
  ai_model: Type.Union([Type.String(), Type.Null()], { description: "null for the service's own AI." }),
  ai_prompt_mode: textEnum(['simple', 'structured']),
  ai_structured_response: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  ai_error: Type.Optional(Type.Object({ error_code: Type.String(), note: Type.String() }, { description: 'Why an analysis asked for did not run.' })),
});

/** This record in the kernel's table of records (shared/contracts.ts, PublishedRecords). */
declare global {
  interface PublishedRecords {
    aiRecord: Static<typeof AI_RECORD_SCHEMA>;
  }
}

/** The AI object of a capture that asked for no analysis: the spec's three fields. */
export const NOT_ANALYSED_SCHEMA = Type.Object({ ai_analyzed: Type.Boolean(), ai_prompt: Type.String(), ai_response: Type.String() });

/** The AI object of the lists and deliveries: the stored one, else the three fields of a capture that asked for none. */
export const LISTED_AI_SCHEMA = Type.Union([AI_RECORD_SCHEMA, NOT_ANALYSED_SCHEMA]);

/** The account-wide list's AI object of a capture that asked for no analysis. */
export const NOT_ANALYSED: Readonly<Static<typeof NOT_ANALYSED_SCHEMA>> = Object.freeze({ ai_analyzed: false, ai_prompt: '', ai_response: '' });

/** The provider an analysis asks for: the service's own AI unless an own provider is named. */
export function providerOf(o: Pick<ScreenshotOptions, 'ai_provider'>): AiProvider {
  return o.ai_provider ?? 'service';
}

/**
 * The AI object of a capture whose analysis did not run: what was asked, no answer, and why
 * (ai_error). ai_prompt is the caller's prompt ('' when none, and in structured mode);
 * ai_model is null for the service's own AI.
 */
export function failedRecord(o: AnalysisOptions, model: string | null, error: { error_code: string; note: string }): AiRecord {
  const structured = o.ai_prompt_mode === 'structured';
  const provider = providerOf(o);
  return {
    ai_analyzed: false,
    ai_prompt: structured ? '' : (o.ai_prompt ?? ''),
    ai_response: '',
    ai_provider: provider,
    ai_model: provider === 'service' ? null : model,
    ai_prompt_mode: structured ? 'structured' : 'simple',
    ai_structured_response: null,
    ai_error: error,
  };
}

/** The AI object of an analysis that ran; in structured mode ai_response is the object JSON-encoded. */
export function analysedRecord(o: AnalysisOptions, model: string, answer: { text: string; structured: Record<string, unknown> | null }): AiRecord {
  const { ai_error: _, ...asked } = failedRecord(o, model, { error_code: '', note: '' });
  const structured = asked.ai_prompt_mode === 'structured' ? answer.structured : null;
  return { ...asked, ai_analyzed: true, ai_response: structured ? JSON.stringify(structured) : answer.text, ai_structured_response: structured };
}

/** Whether a capture's analysis is paid in AI credits (the service's own AI; own providers never are). */
export function billsAiCredits(o: Pick<ScreenshotOptions, 'analyze_image_with_ai' | 'ai_provider'>): boolean {
  return o.analyze_image_with_ai === true && providerOf(o) === 'service';
}

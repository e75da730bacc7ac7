/**
 * The spec's AI object of a capture (AiRecord in contracts.ts), built in one place: by the ai
 * service for an analysis that ran or failed, by capture when the ai service could not be
 * reached, and for the lists of screenshots that asked for none.
 */
import type { AiProvider, AiRecord } from '../../shared/contracts';
import type { AnalysisOptions, ScreenshotOptions } from '../../shared/screenshot-options';

/** The account-wide list's AI object of a capture that asked for no analysis. */
export const NOT_ANALYSED = Object.freeze({ ai_analyzed: false, ai_prompt: '', ai_response: '' });

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

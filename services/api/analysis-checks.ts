/**
 * The AI checks of a capture request, after the plan gates and before any credit (the spec's
 * order): with analyze_image_with_ai, the ai service checks the provider, the model and the
 * structured fields (ai.check). Without it, an analysis option the request names would do
 * nothing, so it is refused (never accepted and ignored); `ai_provider` alone is let through,
 * since naming an own provider is a plan question the gates have answered already.
 */
import type { Context, ServiceBroker } from 'moleculer';
import { call } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import type { AnalysisOptions } from '../shared/screenshot-options';

/**
 * What the checks of an analysis answer before any credit, for a route's error list: ai.check's
 * (provider, model, the service's backend), and an analysis option named without the flag.
 */
export const ANALYSIS_CHECK_ERRORS = [
  'invalid_parameter',
  'ai_provider_not_configured',
  'ai_model_required',
  'ai_model_not_supported',
  'ai_provider_unavailable',
  'ai_service_not_configured',
] as const;
/** And where the analysis may carry structured fields (ai.check judges them). */
export const STRUCTURED_FIELDS_ERRORS = ['invalid_ai_structured_fields'] as const;

/** The options that mean something only with analyze_image_with_ai=true. */
const ANALYSIS_ONLY = ['ai_prompt', 'ai_prompt_mode', 'ai_structured_fields', 'ai_structured_instructions', 'ai_model'] as const;

/**
 * `options` are those the capture will run with (for PATCH, the stored ones with the change
 * merged in); `given` those this request names (by default the same).
 */
export async function checkAnalysis(
  caller: ServiceBroker | Context,
  accountId: string,
  options: AnalysisOptions,
  given: Partial<AnalysisOptions> = options,
): Promise<void> {
  if (options.analyze_image_with_ai === true) {
    await call(caller, 'ai.check', { accountId, options });
    return;
  }
  const named = ANALYSIS_ONLY.find((name) => given[name] !== undefined);
  if (named) {
    throw serviceError(
      'invalid_parameter',
      `${named}: requires analyze_image_with_ai=true (it sets up an AI analysis of the capture); add analyze_image_with_ai=true or leave ${named} out.`,
      {
        param: named,
      },
    );
  }
}

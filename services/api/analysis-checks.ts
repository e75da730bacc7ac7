/**
 * The AI checks of a capture request, after the plan gates and before any credit (the spec's
 * order): with analyze_image_with_ai, the ai service checks the provider, the model and the
 * structured fields (ai.check); without, only the field definitions are checked here, so a
 * configuration never stores definitions a later analysis would refuse.
 */
import type { Context, ServiceBroker } from 'moleculer';
import { call } from '../shared/contracts';
import type { ScreenshotOptions } from '../shared/screenshot-options';
import { checkStructuredFields } from '../shared/structured-fields';

export async function checkAnalysis(caller: ServiceBroker | Context, accountId: string, options: ScreenshotOptions): Promise<void> {
  if (options.analyze_image_with_ai === true) await call(caller, 'ai.check', { accountId, options });
  else checkStructuredFields(options);
}

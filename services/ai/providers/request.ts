/**
 * What an analysis asks, independent of the provider: the system text, the user's text next
 * to the images, and in structured mode the schema to send; and how a structured answer
 * becomes the result. Each client only puts these into its own wire format.
 */
import { checkStructuredAnswer, type JsonSchema, outputSchema } from './structured';
import { AiFailure, type AnalysisImage, type AnalysisRequest, type AnalysisResult, DEFAULT_PROMPT } from './types';

export interface AnalysisParts {
  system?: string;
  text: string;
  /** The schema sent, and the check of a (parsed) answer against what was asked. */
  structured?: { schema: JsonSchema; check(answer: unknown): Record<string, unknown> };
}

/** The request's content in order, whatever the wire: each image (its label first, when it has one), then the text. */
export function contentParts(req: AnalysisRequest, parts: AnalysisParts): Array<{ text: string } | { image: AnalysisImage }> {
  return [...req.images.flatMap((image) => [...(image.label ? [{ text: image.label }] : []), { image }]), { text: parts.text }];
}

/** The name the structured answer goes by where a provider wants one (OpenAI's json_schema.name, Anthropic's tool). */
export const ANSWER_NAME = 'screenshot_analysis';

export function analysisParts(req: AnalysisRequest): AnalysisParts {
  if (req.task) return { system: req.task.system, text: req.task.text, structured: { schema: req.task.schema, check: req.task.check } };
  if (req.mode === 'simple') return { text: req.prompt?.trim() ? req.prompt : DEFAULT_PROMPT };
  const fields = req.fields ?? [];
  if (fields.length === 0) throw new TypeError('structured analysis without fields');
  const { schema, relaxed } = outputSchema(fields);
  const instructions = req.instructions?.trim();
  return {
    system:
      'You analyse screenshots of web pages and answer with one JSON object holding exactly the requested fields.' +
      (instructions ? `\n\nInstructions from the user:\n${instructions}` : ''),
    text: 'Fill in every field from this screenshot.' + (relaxed ? ' Where a field lists its options, use only those options, written exactly as given.' : ''),
    structured: { schema, check: (answer) => checkStructuredAnswer(answer, fields) },
  };
}

/** An answer that is no answer: refused, cut off at the token limit, or empty. */
export function unusableAnswer(why: 'refused' | 'cut off' | 'empty'): AiFailure {
  const what = {
    refused: 'the model declined to analyse this image',
    'cut off': "the model's answer was cut off at its length limit",
    empty: 'the model answered nothing',
  }[why];
  return new AiFailure('ai_response_invalid', `No usable answer: ${what}. Try again, or use a shorter prompt, fewer fields or another model.`);
}

/** The result of a structured analysis whose answer (already parsed JSON) is checked against what was asked. */
export function structuredResult(answer: unknown, parts: AnalysisParts, model: string): AnalysisResult {
  if (!parts.structured) throw new TypeError('a structured result of an analysis that asked for none');
  const structured = parts.structured.check(answer);
  return { text: JSON.stringify(structured), structured, model };
}

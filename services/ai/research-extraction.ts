/**
 * Domain research's extraction (ai.research): the fields asked for, from the screenshots and
 * the visible text of up to three pages of one site, in one provider request with a
 * structured answer. Each field comes back as {found, value, page}: the model says whether
 * the pages state it and on which page, and is told never to guess. Then, here: a field not
 * found, or found on no page that was given, is null with no source (a value the model cannot
 * place on a page is not reported); a value found is kept with the URL of its page.
 *
 * The fields go to the provider under keys of our own (f1, f2, ...), the user's names and
 * descriptions in the text and the schema's descriptions, so any name a user gives (spaces,
 * punctuation, any script) makes a valid schema for every provider.
 *
 * Never thrown for the provider's sake: a failure is an answer (`ok: false`) with its code
 * and note, which the domain is failed with (and its credit refunded).
 */
import Ajv from 'ajv';
import { providerOf } from './public/ai-record';
import type { ResearchDataType, ResearchExtraction, ResearchField, ResearchPageInput } from '../shared/domain-research';
import type { AnalysisOptions } from '../shared/screenshot-options';
import type { FileStore } from '../shared/storage';
import { errorOf, storedImage, type Target } from './analysis';
import type { AnalysisObserver } from './metrics';
import { AiFailure, type AnalysisTask } from './providers';

export interface ResearchRequest {
  accountId: string;
  options: AnalysisOptions;
  domain: string;
  notes: string | null;
  fields: ResearchField[];
  pages: ResearchPageInput[];
}

export interface ResearchExtractionDeps {
  targets(accountId: string, options: AnalysisOptions): Promise<Target>;
  store: Pick<FileStore, 'get'>;
  logError?: (message: string, err: unknown) => void;
  observer?: AnalysisObserver;
}

/** Most characters of one string value kept, and of one list (items, characters each). */
export const VALUE_LIMITS = { text: 2000, items: 50, item: 500 } as const;

const key = (i: number) => `f${i + 1}`;

function valueSchema(type: ResearchDataType): Record<string, unknown> {
  return type === 'array' ? { type: 'array', items: { type: 'string' } } : { type: type };
}

const TYPE_WORDS: Record<ResearchDataType, string> = { string: 'text', number: 'a number', boolean: 'true or false', array: 'a list of texts' };

/** A value as reported: trimmed and bounded; null when it holds nothing. */
function cleaned(type: ResearchDataType, value: unknown): unknown {
  if (type === 'string') {
    const text = String(value).trim().slice(0, VALUE_LIMITS.text);
    return text === '' ? null : text;
  }
  if (type === 'array') {
    return (value as unknown[])
      .map((v) => String(v).trim().slice(0, VALUE_LIMITS.item))
      .filter((v) => v !== '')
      .slice(0, VALUE_LIMITS.items);
  }
  if (type === 'number') return Number.isFinite(value) ? value : null;
  return value;
}

const ajv = new Ajv({ strict: false, allErrors: false });

/** The wording, schema and check of one domain's extraction. */
export function researchTask(
  domain: string,
  notes: string | null,
  fields: readonly ResearchField[],
  pages: readonly ResearchPageInput[],
): AnalysisTask & { read(answer: Record<string, unknown>): Extract<ResearchExtraction, { ok: true }> } {
  const properties = Object.fromEntries(
    fields.map((f, i) => [
      key(i),
      {
        type: 'object',
        description: `${f.data_field_name}: ${(f.data_field_prompt_description || f.data_field_name).slice(0, 300)}`,
        properties: {
          found: { type: 'boolean', description: 'Whether these pages state it.' },
          value: { ...valueSchema(f.data_type), description: `As ${TYPE_WORDS[f.data_type]}; when not found, an empty one.` },
          page: { type: 'integer', description: `The number of the page it is stated on (1 to ${pages.length}); 0 when not found.` },
        },
        required: ['found', 'value', 'page'],
        additionalProperties: false,
      },
    ]),
  );
  const schema = { type: 'object', properties, required: fields.map((_, i) => key(i)), additionalProperties: false };
  const validate = ajv.compile(schema);
  return {
    system:
      `You research one organisation from its own website, for a spreadsheet. You are given the screenshots and the visible text of ${pages.length} ` +
      `numbered page${pages.length > 1 ? 's' : ''} of ${domain}, and the fields to fill. ` +
      'For each field: set found to true only when these pages state the answer, give it in value, and give the number of the page it is stated on in page. ' +
      'When the pages do not state it, set found to false, value to an empty value of its type and page to 0. Never guess, and never use anything you know ' +
      'from elsewhere.' +
      (notes ? `\n\nNotes from the person who asked:\n${notes}` : ''),
    text: [
      ...pages.map((p, i) => `Page ${i + 1}: ${p.url}\nTitle: ${p.title}\nVisible text:\n${p.text}`),
      `Fields:\n${fields
        .map((f, i) => `- ${key(i)}: "${f.data_field_name}" ` + `(${TYPE_WORDS[f.data_type]}): ${f.data_field_prompt_description || f.data_field_name}`)
        .join('\n')}`,
    ].join('\n\n---\n\n'),
    schema,
    check(answer) {
      if (!validate(answer)) {
        const e = validate.errors?.[0];
        throw new AiFailure(
          'ai_response_invalid',
          `The model's answer does not match the fields (${e?.instancePath || 'answer'} ${e?.message ?? 'is invalid'}). Try again; if it keeps failing, ` +
            `describe the fields more plainly or use another model.`,
        );
      }
      return answer as Record<string, unknown>;
    },
    read(answer) {
      const data: Record<string, unknown> = {};
      const sources: Record<string, string | null> = {};
      fields.forEach((f, i) => {
        const a = answer[key(i)] as { found: boolean; value: unknown; page: number };
        const page = a.found && Number.isInteger(a.page) ? pages[a.page - 1] : undefined;
        const value = page ? cleaned(f.data_type, a.value) : null;
        data[f.data_field_name] = value;
        sources[f.data_field_name] = value === null ? null : (page?.url ?? null);
      });
      return { ok: true, data, sources };
    },
  };
}

export class ResearchExtractor {
  constructor(private readonly deps: ResearchExtractionDeps) {}

  async extract(req: ResearchRequest): Promise<ResearchExtraction> {
    const provider = providerOf(req.options);
    try {
      const target = await this.deps.targets(req.accountId, req.options);
      const images = await Promise.all(
        req.pages.map(async (p, i) => ({ ...(await storedImage(this.deps.store, p.image)), label: `Page ${i + 1} (${p.url}):` })),
      );
      const task = researchTask(req.domain, req.notes, req.fields, req.pages);
      const result = await target.client.analyze({
        images,
        task,
        mode: 'simple',
        model: target.model,
        ...(target.upstream ? { upstream: target.upstream } : {}),
      });
      this.deps.observer?.analysed(provider, null);
      return task.read(result.structured ?? {});
    } catch (err) {
      const { error_code, note } = errorOf(err, provider);
      this.deps.observer?.analysed(provider, error_code);
      if (error_code === 'internal_error') this.deps.logError?.('a research extraction failed', err);
      const operators = provider === 'service' && (error_code === 'ai_provider_key_rejected' || error_code === 'ai_provider_billing');
      const ours = error_code === 'internal_error';
      return {
        ok: false,
        error: {
          error_code,
          note: ours
            ? "The fields could not be extracted because of a failure on our side; it was logged. The domain's credit was not spent."
            : operators
              ? "This server's AI backend refused the request (its operator's key or billing); the domain's credit was not spent. Retry later."
              : note,
        },
      };
    }
  }
}

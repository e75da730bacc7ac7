/**
 * What each real-location name of the hosted service means: a country (ISO 3166-1 alpha-2),
 * a US state (USPS code), a city (with its country, and its state in the US) or a region (a
 * list of country names). The names are the hosted service's own, all of them, as its
 * official MCP server lists them (PagePixels/mcp-server, src/server.ts, REAL_LOCATIONS), so
 * clients and agents written against it work here unchanged. Decisions (docs/api.md, "Real
 * locations", and docs/decisions/):
 *
 * - `New York` is the city (New York City, in the state of New York): the list has no other
 *   New York, and an exit in the city is also one in the state, so it serves either reading.
 * - `Washington` is the state (the list has every state and no Washington, D.C.); `Georgia`
 *   is the country, `Georgia (US)` the state; `US` and `USA` are the United States, `Great
 *   Britain` and `United Kingdom` are GB; `Dominica` is the island (DM), not the Dominican
 *   Republic; `Puerto Rico`, `Hong Kong`, `Aruba` and the `British Virgin Islands` are
 *   targeted by their own ISO codes, as the providers do.
 * - A country named picks one of its cities at random (the spec's rule, "a random city is
 *   used when a country is named"): its largest cities of at least a million people, up to
 *   three (GeoNames population figures; districts and boroughs of a larger city, such as
 *   Brooklyn or Iztapalapa, are left out). A country without such a city is targeted as a
 *   whole: its residential pool outside one big city is too thin to name a town.
 * - `Europe` is the UN geoscheme's Europe (M49 region 150): Russia, Belarus and Ukraine in,
 *   Cyprus, Turkey and the Caucasus out. It picks one of its countries at random, each as
 *   likely as another, and that country then picks one of its cities as above.
 */

/** A US state: its USPS code and its English name. */
export interface UsState {
  code: string;
  name: string;
}

/** One concrete targeting a provider is asked for: a country, a US state, or a city. */
export interface Target {
  /** ISO 3166-1 alpha-2, upper case. */
  country: string;
  /** A US state (a state target, or the state of a US city). */
  state?: UsState;
  /** A city's English name (ASCII), as the providers' geolocation databases name it. */
  city?: string;
}

export type Place =
  | { kind: 'country'; country: string }
  | { kind: 'state'; state: UsState }
  | { kind: 'city'; target: Target }
  | { kind: 'region'; countries: string[] };

const US_STATES: Record<string, string> = {
  AL: 'Alabama',
  AK: 'Alaska',
  AZ: 'Arizona',
  AR: 'Arkansas',
  CA: 'California',
  CO: 'Colorado',
  CT: 'Connecticut',
  DE: 'Delaware',
  FL: 'Florida',
  GA: 'Georgia',
  HI: 'Hawaii',
  ID: 'Idaho',
  IL: 'Illinois',
  IN: 'Indiana',
  IA: 'Iowa',
  KS: 'Kansas',
  KY: 'Kentucky',
  LA: 'Louisiana',
  ME: 'Maine',
  MD: 'Maryland',
  MA: 'Massachusetts',
  MI: 'Michigan',
  MN: 'Minnesota',
  MS: 'Mississippi',
  MO: 'Missouri',
  MT: 'Montana',
  NE: 'Nebraska',
  NV: 'Nevada',
  NH: 'New Hampshire',
  NJ: 'New Jersey',
  NM: 'New Mexico',
  NY: 'New York',
  NC: 'North Carolina',
  ND: 'North Dakota',
  OH: 'Ohio',
  OK: 'Oklahoma',
  OR: 'Oregon',
  PA: 'Pennsylvania',
  RI: 'Rhode Island',
  SC: 'South Carolina',
  SD: 'South Dakota',
  TN: 'Tennessee',
  TX: 'Texas',
  UT: 'Utah',
  VT: 'Vermont',
  VA: 'Virginia',
  WA: 'Washington',
  WV: 'West Virginia',
  WI: 'Wisconsin',
  WY: 'Wyoming',
};

export function usState(code: string): UsState {
  const name = US_STATES[code];
  if (!name) throw new Error(`no US state ${code}`);
  return { code, name };
}

/** The hosted service's country names and their ISO codes. */
const COUNTRIES: Record<string, string> = {
  Afghanistan: 'AF',
  Albania: 'AL',
  Andorra: 'AD',
  Angola: 'AO',
  Argentina: 'AR',
  Armenia: 'AM',
  Aruba: 'AW',
  Australia: 'AU',
  Austria: 'AT',
  Azerbaijan: 'AZ',
  Bahamas: 'BS',
  Bahrain: 'BH',
  Bangladesh: 'BD',
  Belarus: 'BY',
  Belgium: 'BE',
  Belize: 'BZ',
  Benin: 'BJ',
  Bhutan: 'BT',
  Bolivia: 'BO',
  'Bosnia and Herzegovina': 'BA',
  Brazil: 'BR',
  'British Virgin Islands': 'VG',
  Bulgaria: 'BG',
  Cambodia: 'KH',
  Cameroon: 'CM',
  Canada: 'CA',
  Chad: 'TD',
  Chile: 'CL',
  China: 'CN',
  Colombia: 'CO',
  'Costa Rica': 'CR',
  "Côte d'Ivoire": 'CI',
  Croatia: 'HR',
  Cuba: 'CU',
  Cyprus: 'CY',
  'Czech Republic': 'CZ',
  Denmark: 'DK',
  Djibouti: 'DJ',
  Dominica: 'DM',
  Ecuador: 'EC',
  Egypt: 'EG',
  Estonia: 'EE',
  Ethiopia: 'ET',
  Fiji: 'FJ',
  Finland: 'FI',
  France: 'FR',
  Gambia: 'GM',
  Georgia: 'GE',
  Germany: 'DE',
  Ghana: 'GH',
  'Great Britain': 'GB',
  Greece: 'GR',
  Haiti: 'HT',
  Honduras: 'HN',
  'Hong Kong': 'HK',
  Hungary: 'HU',
  Iceland: 'IS',
  India: 'IN',
  Indonesia: 'ID',
  Iran: 'IR',
  Iraq: 'IQ',
  Ireland: 'IE',
  Israel: 'IL',
  Italy: 'IT',
  Jamaica: 'JM',
  Japan: 'JP',
  Jordan: 'JO',
  Kazakhstan: 'KZ',
  Kenya: 'KE',
  Latvia: 'LV',
  Lebanon: 'LB',
  Liberia: 'LR',
  Liechtenstein: 'LI',
  Lithuania: 'LT',
  Luxembourg: 'LU',
  Macedonia: 'MK',
  Madagascar: 'MG',
  Malaysia: 'MY',
  Maldives: 'MV',
  Mali: 'ML',
  Malta: 'MT',
  Mauritania: 'MR',
  Mauritius: 'MU',
  Mexico: 'MX',
  Moldova: 'MD',
  Monaco: 'MC',
  Mongolia: 'MN',
  Montenegro: 'ME',
  Morocco: 'MA',
  Mozambique: 'MZ',
  Myanmar: 'MM',
  Netherlands: 'NL',
  'New Zealand': 'NZ',
  Nigeria: 'NG',
  Norway: 'NO',
  Oman: 'OM',
  Pakistan: 'PK',
  Panama: 'PA',
  Paraguay: 'PY',
  Peru: 'PE',
  Philippines: 'PH',
  Poland: 'PL',
  Portugal: 'PT',
  'Puerto Rico': 'PR',
  Qatar: 'QA',
  Romania: 'RO',
  Russia: 'RU',
  'Saudi Arabia': 'SA',
  Senegal: 'SN',
  Serbia: 'RS',
  Seychelles: 'SC',
  Singapore: 'SG',
  Slovakia: 'SK',
  Slovenia: 'SI',
  'South Africa': 'ZA',
  'South Korea': 'KR',
  'South Sudan': 'SS',
  Spain: 'ES',
  Sudan: 'SD',
  Sweden: 'SE',
  Switzerland: 'CH',
  Syria: 'SY',
  Taiwan: 'TW',
  Thailand: 'TH',
  Togo: 'TG',
  'Trinidad and Tobago': 'TT',
  Tunisia: 'TN',
  Turkey: 'TR',
  Turkmenistan: 'TM',
  UAE: 'AE',
  Uganda: 'UG',
  Ukraine: 'UA',
  'United Kingdom': 'GB',
  Uruguay: 'UY',
  US: 'US',
  USA: 'US',
  Uzbekistan: 'UZ',
  Vietnam: 'VN',
  Yemen: 'YE',
  Zambia: 'ZM',
  Zimbabwe: 'ZW',
};

/** The hosted service's US state names (every state but New York, which is the city) and their codes. */
const STATES: Record<string, string> = {
  Alabama: 'AL',
  Alaska: 'AK',
  Arizona: 'AZ',
  Arkansas: 'AR',
  California: 'CA',
  Colorado: 'CO',
  Connecticut: 'CT',
  Delaware: 'DE',
  Florida: 'FL',
  'Georgia (US)': 'GA',
  Hawaii: 'HI',
  Idaho: 'ID',
  Illinois: 'IL',
  Indiana: 'IN',
  Iowa: 'IA',
  Kansas: 'KS',
  Kentucky: 'KY',
  Louisiana: 'LA',
  Maine: 'ME',
  Maryland: 'MD',
  Massachusetts: 'MA',
  Michigan: 'MI',
  Minnesota: 'MN',
  Mississippi: 'MS',
  Missouri: 'MO',
  Montana: 'MT',
  Nebraska: 'NE',
  Nevada: 'NV',
  'New Hampshire': 'NH',
  'New Jersey': 'NJ',
  'New Mexico': 'NM',
  'North Carolina': 'NC',
  'North Dakota': 'ND',
  Ohio: 'OH',
  Oklahoma: 'OK',
  Oregon: 'OR',
  Pennsylvania: 'PA',
  'Rhode Island': 'RI',
  'South Carolina': 'SC',
  'South Dakota': 'SD',
  Tennessee: 'TN',
  Texas: 'TX',
  Utah: 'UT',
  Vermont: 'VT',
  Virginia: 'VA',
  Washington: 'WA',
  'West Virginia': 'WV',
  Wisconsin: 'WI',
  Wyoming: 'WY',
};

/** The hosted service's city names: `City, CC` or, in the US, `City, ST, US`. */
const CITIES: Record<string, string> = {
  Berlin: 'Berlin, DE',
  Chicago: 'Chicago, IL, US',
  Houston: 'Houston, TX, US',
  London: 'London, GB',
  'Los Angeles': 'Los Angeles, CA, US',
  Miami: 'Miami, FL, US',
  Moscow: 'Moscow, RU',
  'New York': 'New York, NY, US',
};

const REGIONS: Record<string, string[]> = {
  Europe: [
    'Albania',
    'Andorra',
    'Austria',
    'Belarus',
    'Belgium',
    'Bosnia and Herzegovina',
    'Bulgaria',
    'Croatia',
    'Czech Republic',
    'Denmark',
    'Estonia',
    'Finland',
    'France',
    'Germany',
    'Greece',
    'Hungary',
    'Iceland',
    'Ireland',
    'Italy',
    'Latvia',
    'Liechtenstein',
    'Lithuania',
    'Luxembourg',
    'Macedonia',
    'Malta',
    'Moldova',
    'Monaco',
    'Montenegro',
    'Netherlands',
    'Norway',
    'Poland',
    'Portugal',
    'Romania',
    'Russia',
    'Serbia',
    'Slovakia',
    'Slovenia',
    'Spain',
    'Sweden',
    'Switzerland',
    'Ukraine',
    'United Kingdom',
  ],
};

/**
 * The cities a country named picks from: its largest of at least a million people, up to
 * three (GeoNames population figures, English names as the providers' geolocation databases
 * spell them, without diacritics), `City, ST` in the US. Countries not listed are targeted
 * as a whole.
 */
const COUNTRY_CITIES: Record<string, string[]> = {
  AE: ['Dubai', 'Sharjah'],
  AF: ['Kabul'],
  AM: ['Yerevan'],
  AO: ['Luanda'],
  AR: ['Buenos Aires', 'Cordoba', 'Rosario'],
  AT: ['Vienna'],
  AU: ['Sydney', 'Melbourne', 'Brisbane'],
  AZ: ['Baku'],
  BD: ['Dhaka', 'Chittagong', 'Khulna'],
  BE: ['Brussels'],
  BG: ['Sofia'],
  BO: ['Santa Cruz de la Sierra'],
  BR: ['Sao Paulo', 'Rio de Janeiro', 'Salvador'],
  BY: ['Minsk'],
  CA: ['Toronto', 'Montreal', 'Calgary'],
  CI: ['Abidjan'],
  CL: ['Santiago'],
  CM: ['Douala', 'Yaounde'],
  CN: ['Shanghai', 'Beijing', 'Tianjin'],
  CO: ['Bogota', 'Cali', 'Medellin'],
  CU: ['Havana'],
  CZ: ['Prague'],
  DE: ['Berlin', 'Hamburg', 'Munich'],
  DK: ['Copenhagen'],
  EC: ['Guayaquil', 'Quito'],
  EG: ['Cairo', 'Alexandria', 'Giza'],
  ES: ['Madrid', 'Barcelona'],
  ET: ['Addis Ababa'],
  FR: ['Paris'],
  GB: ['London'],
  GE: ['Tbilisi'],
  GH: ['Accra', 'Kumasi'],
  HK: ['Hong Kong'],
  HT: ['Port-au-Prince'],
  HU: ['Budapest'],
  ID: ['Jakarta', 'Surabaya', 'Medan'],
  IE: ['Dublin'],
  IN: ['Mumbai', 'Delhi', 'Bengaluru'],
  IQ: ['Baghdad', 'Basrah', 'Mosul'],
  IR: ['Tehran', 'Mashhad', 'Isfahan'],
  IT: ['Rome', 'Milan'],
  JO: ['Amman'],
  JP: ['Tokyo', 'Yokohama', 'Osaka'],
  KE: ['Nairobi'],
  KH: ['Phnom Penh'],
  KR: ['Seoul', 'Busan', 'Incheon'],
  KZ: ['Almaty'],
  LB: ['Beirut'],
  MA: ['Casablanca', 'Rabat'],
  MG: ['Antananarivo'],
  ML: ['Bamako'],
  MM: ['Yangon', 'Mandalay'],
  MX: ['Mexico City', 'Guadalajara', 'Puebla'],
  MY: ['Kuala Lumpur'],
  MZ: ['Maputo'],
  NG: ['Lagos', 'Kano', 'Ibadan'],
  PE: ['Lima'],
  PH: ['Quezon City', 'Manila', 'Davao'],
  PK: ['Karachi', 'Lahore', 'Faisalabad'],
  PL: ['Warsaw'],
  PY: ['Asuncion'],
  RO: ['Bucharest'],
  RS: ['Belgrade'],
  RU: ['Moscow', 'Saint Petersburg', 'Novosibirsk'],
  SA: ['Riyadh', 'Jeddah', 'Mecca'],
  SD: ['Khartoum', 'Omdurman'],
  SE: ['Stockholm'],
  SG: ['Singapore'],
  SN: ['Dakar'],
  SY: ['Aleppo', 'Damascus'],
  TH: ['Bangkok'],
  TR: ['Istanbul', 'Ankara', 'Izmir'],
  TW: ['Taipei', 'Kaohsiung', 'Taichung'],
  UA: ['Kyiv', 'Kharkiv', 'Dnipro'],
  UG: ['Kampala'],
  US: ['New York, NY', 'Los Angeles, CA', 'Chicago, IL'],
  UY: ['Montevideo'],
  UZ: ['Tashkent'],
  VN: ['Ho Chi Minh City', 'Hanoi'],
  YE: ['Sanaa'],
  ZA: ['Cape Town', 'Durban', 'Johannesburg'],
  ZM: ['Lusaka'],
  ZW: ['Harare'],
};

/** `City, CC`, `City, ST, US` or (in COUNTRY_CITIES) `City` / `City, ST` with the country given. */
function cityTarget(spec: string, country?: string): Target {
  const parts = spec.split(', ');
  const city = parts[0] as string;
  const cc = country ?? (parts.at(-1) as string);
  const st = cc === 'US' ? parts[1] : undefined;
  return st ? { country: cc, state: usState(st), city } : { country: cc, city };
}

/** Every name of the hosted service with its meaning, in the list's order. */
export const HOSTED_PLACES: ReadonlyMap<string, Place> = new Map<string, Place>([
  ...Object.entries(COUNTRIES).map(([name, country]): [string, Place] => [name, { kind: 'country', country }]),
  ...Object.entries(STATES).map(([name, code]): [string, Place] => [name, { kind: 'state', state: usState(code) }]),
  ...Object.entries(CITIES).map(([name, spec]): [string, Place] => [name, { kind: 'city', target: cityTarget(spec) }]),
  ...Object.entries(REGIONS).map(([name, countries]): [string, Place] => [name, { kind: 'region', countries }]),
]);

/** The targets a country named picks from at random: its cities, or the country as a whole. */
export function countryTargets(country: string): Target[] {
  const cities = COUNTRY_CITIES[country];
  return cities ? cities.map((c) => cityTarget(c, country)) : [{ country }];
}

/** A target in words, for operators (never a credential): "London, GB", "California (state), US", "country DE". */
export function describeTarget(t: Target): string {
  if (t.city) return [t.city, t.state?.code, t.country].filter(Boolean).join(', ');
  if (t.state) return `${t.state.name} (state), ${t.country}`;
  return `country ${t.country}`;
}

import { MemoryUsageStore } from '../../services/billing/usage-store';
import { behavesAsAUsageStore } from './usage-store-behaviour';

behavesAsAUsageStore('in-process', () => ({ store: new MemoryUsageStore(), prefix: '' }));

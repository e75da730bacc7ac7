// The official npm client ships no types; npm-client.test.ts describes the methods it calls.
declare module 'screenshots-pagepixels';
